import type { ApiContext } from './api-context.js';
import type { CheckedReply, ReplyCheck, ReplyRowError } from './check-reply.js';
import { FatalError } from './fatal-error.js';
import { readImportErrors } from './import-errors-pages.js';
import { readImport } from './import-resource.js';
import { secondsText } from './retry-policy.js';

/**
 * The first wait before reading an import, doubled after every read that finds it still going,
 * up to POLL_MAX_MS. note: each read counts against the account's minute quota; at the cap a
 * watch costs four requests a minute.
 */
const POLL_FIRST_MS = 1_000;
const POLL_MAX_MS = 15_000;

export interface WatchedBatch {
  /** the import the server named in its 504 */
  importId: string;
  kind: string;
  /** rows the batch sent */
  rowCount: number;
  /** the watch ends by then, on ctx.now's clock */
  deadline: number;
  /** the option that set the deadline, for the message when it passes */
  limit: '--max-watch' | '--max-retry-time';
}

/** How a watched import ended: written (its counts and failed rows, believed as a 201 would be), or failed: nothing was written. */
export type WatchOutcome<Reply = CheckedReply> = { state: 'completed'; reply: Reply } | { state: 'failed' };

/**
 * Reads an import whose request was answered 504 (GET /v1/api/imports/{id}) until it ends, with
 * a growing wait between reads, until `deadline`. `completed`: its counts and its failed rows
 * (GET .../errors) must account for exactly the rows of the batch, as a 201's must
 * (`check`: checkBulkReply, or an archive's or delete's). `failed`: the import wrote nothing and never will. Throws FatalError, the
 * batch's outcome unknown, when the deadline passes first or the server's answers cannot be
 * believed.
 */
export async function watchImport<Reply>(
  ctx: ApiContext,
  batch: WatchedBatch,
  check: (body: unknown, rowsSent: number, dryRun: boolean) => ReplyCheck<Reply>,
): Promise<WatchOutcome<Reply>> {
  const now = ctx.now ?? Date.now;
  const { importId, kind, rowCount, deadline } = batch;
  const started = now();
  const doubt = (problem: string) => new FatalError(`the server's answer about import ${importId} cannot be believed: ${problem}`, 'unknown');
  let delay = POLL_FIRST_MS;
  /** the state last read; undefined while the import reads 404 */
  let state: string | undefined;
  for (;;) {
    const wait = Math.min(delay, deadline - now());
    if (wait <= 0) {
      const watched = `${secondsText(now() - started)} s of watching (${batch.limit})`;
      throw new FatalError(
        `${state === undefined ? `import ${importId} still read 404 (not recorded yet) after ${watched}` : `import ${importId} is still ${state} after ${watched}`}; check it with "bulk-import imports show ${importId}" before sending these rows again`,
        'unknown',
      );
    }
    await ctx.sleep(wait);
    delay = Math.min(delay * 2, POLL_MAX_MS);
    const found = await readImport(ctx, importId, deadline);
    // note: the API records an import answered 504 as running at best effort; it may read 404 until it ends.
    if (found === undefined) continue;
    const { id, rows } = found.import;
    if (id !== importId || found.import.kind !== kind || rows.received !== rowCount) {
      throw doubt(`it describes import ${id} of ${rows.received} ${found.import.kind}, not the ${rowCount} ${kind} of this batch`);
    }
    state = found.import.state;
    if (state === 'failed') return { state: 'failed' };
    // note: only a whole-file import can be cancelled, with what it wrote kept.
    if (state === 'cancelled') throw doubt('it reads cancelled, which a bulk request never is');
    if (state !== 'completed') continue;
    const errors: ReplyRowError[] = [];
    // note: an import that skipped no row has no list to read.
    if (rows.skipped > 0) {
      const listed = await readImportErrors({ ctx, importId, deadline, maxRows: rowCount, onPage: async (page) => void errors.push(...page) });
      if (listed === 'not-found') throw doubt('its failed rows read 404');
    }
    const checked = check({ import_id: importId, ...rows, errors }, rowCount, false);
    if (!checked.ok) throw doubt(checked.problem);
    return { state: 'completed', reply: checked.reply };
  }
}
