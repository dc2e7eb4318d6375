import { ImportIdSchema } from '../../shared/api-schemas/import-id.js';
import type { AttemptResponse, LookedUp } from '@bulk-import/client';
import type { ApiContext } from './api-context.js';
import type { ReplyCheck } from './check-reply.js';
import { secondsText as seconds } from './retry-policy.js';
import { watchImport } from './watch-import.js';

/** The import a reply names (`import_id`), when it names one. */
function importIdOf(body: unknown): string | undefined {
  const id = typeof body === 'object' && body !== null ? (body as { import_id?: unknown }).import_id : undefined;
  return ImportIdSchema.safeParse(id).success ? (id as string) : undefined;
}

/** The batch whose answer's outcome is unknown, and how a watched import's counts are believed. */
export interface NamedImportBatch<Counts> {
  kind: string;
  rowCount: number;
  check: (body: unknown, rowsSent: number, dryRun: boolean) => ReplyCheck<Counts>;
}

/**
 * The CLI's lookUp of an answer whose outcome is unknown (the client package's CallRules): when
 * it names its import (a 504's `import_id`), the import resource will tell, so the CLI reads it
 * (watch-import.ts) instead of guessing by sending again, for at most --max-watch and never past
 * `endsBy` (--max-retry-time), saying so on stderr. `completed` is the batch's counts, as its 201
 * would have been; `failed` is the server's proof that this key's import wrote nothing and never
 * will, so the batch is sent again as after a 503.
 */
export async function lookUpNamedImport<Counts>(
  ctx: ApiContext,
  batch: NamedImportBatch<Counts>,
  reply: AttemptResponse,
  call: { reason: string; endsBy: number },
): Promise<LookedUp<Counts> | undefined> {
  const importId = importIdOf(reply.body);
  if (importId === undefined) return undefined;
  const now = ctx.now ?? Date.now;
  const watchEnd = now() + ctx.policy.maxWatchMs;
  const deadline = Math.min(watchEnd, call.endsBy);
  ctx.notice(`${call.reason}: watching import ${importId} until it ends (at most ${seconds(deadline - now())} s)`);
  const limit = watchEnd <= call.endsBy ? '--max-watch' : '--max-retry-time';
  const watched = await watchImport(ctx, { importId, kind: batch.kind, rowCount: batch.rowCount, deadline, limit }, batch.check);
  if (watched.state === 'failed') return { type: 'nothing-written', reason: `${call.reason}; import ${importId} then failed: nothing was written` };
  ctx.notice(`import ${importId} completed: its rows are counted once, as it wrote them`);
  return { type: 'found', found: watched.reply };
}
