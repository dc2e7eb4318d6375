import { z } from 'zod';
import { BulkDryRunResponseSchema, BulkResponseSchema } from '../../shared/api-schemas/bulk.js';
import { ImportIdSchema } from '../../shared/api-schemas/import-id.js';
import { RowErrorDetailSchema, RowErrorSchema, type RowError, type RowErrorDetail } from '../../shared/rows/row-errors.js';
import type { RowOutcome } from '../../shared/import/row-outcomes.js';
import { serverText } from './printable.js';

// note: the row-error codes are a closed set that grows: a newer server may send a code this CLI
// does not know yet, and its reply is no less true. Any code is taken and passed on as it came.
export const ReplyRowErrorSchema = RowErrorSchema.extend({
  details: z.array(RowErrorDetailSchema.extend({ code: z.string() })).default([]),
});
// note: a server from before import ids answers without `import_id`; its counts are no less true,
// and the CLI counts rows by them, not by the id.
const ImportReplySchema = BulkResponseSchema.extend({ import_id: ImportIdSchema.optional(), errors: z.array(ReplyRowErrorSchema) });
const DryRunReplySchema = BulkDryRunResponseSchema.extend({ errors: z.array(ReplyRowErrorSchema) });

/** What a checked 201 (or a dry run's 200) says became of the batch, every row accounted for. */
export interface CheckedReply {
  inserted: number;
  updated: number;
  unchanged: number;
  /** one per skipped row, each index inside the batch and listed once; texts bounded (serverText) */
  rowErrors: RowError[];
  /** with `?return=rows`: one per row not skipped, each index inside the batch, in `errors` neither nor listed twice */
  rows?: RowOutcome[];
}

export type ReplyCheck<Reply = CheckedReply> = { ok: true; reply: Reply } | { ok: false; problem: string };

/** A row error as a server sent it, before its texts are bounded. */
export type ReplyRowError = z.output<typeof ReplyRowErrorSchema>;

function pathOf(path: readonly PropertyKey[]): string {
  return path.map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i === 0 ? '' : '.'}${String(part)}`)).join('') || 'the reply';
}

/** Why a reply is not of the documented shape: its first issue, by path. */
export function shapeProblem(error: z.ZodError): string {
  const issue = error.issues[0]!;
  return `it is not of the documented shape (${pathOf(issue.path)}: ${issue.message})`;
}

/** A row error as the CLI passes it on: every text the server wrote bounded and printable. */
export function boundedRowError(error: ReplyRowError): RowError {
  return {
    index: error.index,
    reason: serverText(error.reason),
    details: error.details.map(({ field, code, message }) => ({
      field: field === null ? null : serverText(field),
      // note: a code this CLI does not know is passed on as it came (bounded); see above.
      code: serverText(code) as RowErrorDetail['code'],
      message: serverText(message),
    })),
    ...(error.external_id === undefined ? {} : { external_id: serverText(error.external_id) }),
    // note: an archive's or delete's entry of `ids` (docs/catalogue.md#archive-and-delete)
    ...(error.id === undefined ? {} : { id: serverText(error.id) }),
  };
}

/**
 * Believes a 201 (or a server dry run's 200) only when it accounts for exactly the `rowsSent` rows
 * of the batch: the documented shape, one error per skipped row, each with an index inside the
 * batch and none listed twice, and `inserted + skipped` (with `updated` and `unchanged` when
 * present) equal to the rows sent. note: the CLI's counts and report are built from this reply;
 * one that does not add up would print counts no file could give, or leave rows in neither.
 */
export function checkBulkReply(body: unknown, rowsSent: number, dryRun: boolean): ReplyCheck {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { ok: false, problem: 'it is not a JSON object' };
  const parsed = (dryRun ? DryRunReplySchema : ImportReplySchema).safeParse(body);
  if (!parsed.success) return { ok: false, problem: shapeProblem(parsed.error) };
  const { inserted, updated, unchanged, skipped, errors, rows } = parsed.data;
  const listed = new Set<number>();
  for (const [position, { index }] of errors.entries()) {
    if (index >= rowsSent) return { ok: false, problem: `errors[${position}].index is ${index}, but the rows sent are 0 to ${rowsSent - 1}` };
    if (listed.has(index)) return { ok: false, problem: `row ${index} is listed twice in errors` };
    listed.add(index);
  }
  if (errors.length !== skipped) return { ok: false, problem: `skipped is ${skipped}, but errors lists ${errors.length} row${errors.length === 1 ? '' : 's'}` };
  const synced = updated !== undefined || unchanged !== undefined;
  const total = inserted + (updated ?? 0) + (unchanged ?? 0) + skipped;
  if (total !== rowsSent) {
    return { ok: false, problem: `${synced ? 'inserted + updated + unchanged + skipped' : 'inserted + skipped'} is ${total}, but ${rowsSent} rows were sent` };
  }
  const rowsProblem = rows === undefined ? undefined : problemOfRows(rows, rowsSent, listed);
  if (rowsProblem !== undefined) return { ok: false, problem: rowsProblem };
  return { ok: true, reply: { inserted, updated: updated ?? 0, unchanged: unchanged ?? 0, rowErrors: errors.map(boundedRowError), ...(rows === undefined ? {} : { rows }) } };
}

/** Why `rows` (`?return=rows`) does not name each row sent and not skipped exactly once, if it does not. */
function problemOfRows(rows: readonly RowOutcome[], rowsSent: number, skipped: ReadonlySet<number>): string | undefined {
  const named = new Set<number>();
  for (const [position, { index }] of rows.entries()) {
    if (index >= rowsSent) return `rows[${position}].index is ${index}, but the rows sent are 0 to ${rowsSent - 1}`;
    if (skipped.has(index) || named.has(index)) return `row ${index} is named twice in rows and errors`;
    named.add(index);
  }
  if (named.size + skipped.size !== rowsSent) return `rows names ${named.size} rows and errors ${skipped.size}, but ${rowsSent} rows were sent`;
  return undefined;
}

/**
 * The row errors of a refusal (400 "no valid rows"), as far as they are well formed. note: a
 * refusal wrote nothing, so nothing rides on them: a row without a usable entry is reported with
 * the refusal's own text instead.
 */
export function rowErrorsOfRefusal(body: unknown): RowError[] | undefined {
  const errors = typeof body === 'object' && body !== null ? (body as { errors?: unknown }).errors : undefined;
  if (!Array.isArray(errors)) return undefined;
  return errors.flatMap((entry) => {
    const parsed = ReplyRowErrorSchema.safeParse(entry);
    return parsed.success ? [boundedRowError(parsed.data)] : [];
  });
}
