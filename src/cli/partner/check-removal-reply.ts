import { z } from 'zod';
import { ArchiveDryRunResultSchema, ArchiveResultSchema, DeleteDryRunResultSchema, DeleteResultSchema } from '../../shared/api-schemas/row-removals.js';
import { ImportIdSchema } from '../../shared/api-schemas/import-id.js';
import type { RowRemovalAction } from '../../shared/import/row-removal-job.js';
import type { RowError } from '../../shared/rows/row-errors.js';
import { boundedRowError, ReplyRowErrorSchema, shapeProblem, type ReplyCheck } from './check-reply.js';

/** What a checked archive or delete answer says became of the batch, every entry accounted for. */
export interface CheckedRemoval {
  /** rows archived (archive) */
  archived: number;
  /** rows archived already (archive) */
  unchanged: number;
  /** rows deleted (delete) */
  deleted: number;
  /** one per failed entry, each index inside the batch and listed once; texts bounded (serverText) */
  rowErrors: RowError[];
}

const errors = z.array(ReplyRowErrorSchema);
// note: the import's id is not what the CLI counts by; a watched import's counts come without it.
const SCHEMAS = {
  archive: { done: ArchiveResultSchema.extend({ import_id: ImportIdSchema.optional(), errors }), dryRun: ArchiveDryRunResultSchema.extend({ errors }) },
  delete: { done: DeleteResultSchema.extend({ import_id: ImportIdSchema.optional(), errors }), dryRun: DeleteDryRunResultSchema.extend({ errors }) },
};

/**
 * Believes an archive's or delete's 200 (or a watched import's counts and failed entries) only when
 * it accounts for exactly the `rowsSent` entries of the batch: the documented shape, one error per
 * skipped entry, each with an index inside the batch and none listed twice, and the counts adding
 * up to the entries sent (as checkBulkReply does for an import).
 */
export function removalReplyCheck(action: RowRemovalAction) {
  return function checkRemovalReply(body: unknown, rowsSent: number, dryRun: boolean): ReplyCheck<CheckedRemoval> {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return { ok: false, problem: 'it is not a JSON object' };
    const parsed = (dryRun ? SCHEMAS[action].dryRun : SCHEMAS[action].done).safeParse(body);
    if (!parsed.success) return { ok: false, problem: shapeProblem(parsed.error) };
    const reply = parsed.data as { archived?: number; unchanged?: number; deleted?: number; skipped: number; errors: z.output<typeof errors> };
    const listed = new Set<number>();
    for (const [position, { index }] of reply.errors.entries()) {
      if (index >= rowsSent) return { ok: false, problem: `errors[${position}].index is ${index}, but the entries sent are 0 to ${rowsSent - 1}` };
      if (listed.has(index)) return { ok: false, problem: `entry ${index} is listed twice in errors` };
      listed.add(index);
    }
    if (reply.errors.length !== reply.skipped) return { ok: false, problem: `skipped is ${reply.skipped}, but errors lists ${reply.errors.length}` };
    const counts = { archived: reply.archived ?? 0, unchanged: reply.unchanged ?? 0, deleted: reply.deleted ?? 0 };
    const total = counts.archived + counts.unchanged + counts.deleted + reply.skipped;
    if (total !== rowsSent) {
      return { ok: false, problem: `${action === 'archive' ? 'archived + unchanged + skipped' : 'deleted + skipped'} is ${total}, but ${rowsSent} entries were sent` };
    }
    return { ok: true, reply: { ...counts, rowErrors: reply.errors.map(boundedRowError) } };
  };
}
