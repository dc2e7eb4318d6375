import type { z } from 'zod';
import { validateMergeRow, type MergeRules } from '../../shared/rows/merge-row.js';
import { validateRows } from '../../shared/rows/validate-rows.js';
import type { RowErrorDetail } from '../../shared/rows/row-errors.js';

export type RowCheck = { ok: true; json: string } | { ok: false; reason: string; details: RowErrorDetail[] };

/** How a run checks each row before it is batched: checkRow, or checkMergeRow with --merge. */
export type RowChecker = (value: unknown) => RowCheck;

/**
 * The row as it will be sent: the input as read, with only the schema's fields. note: the raw
 * input is sent, not the normalised row, because the API normalises again and a truncated value
 * that ends in a space would not survive a second trim; a `null` is kept, which clears a field in
 * a merge.
 */
function sentJson(fieldNames: readonly string[], value: unknown): string {
  const source = value as Record<string, unknown>;
  const row: Record<string, unknown> = {};
  for (const name of fieldNames) {
    if (Object.hasOwn(source, name)) row[name] = source[name];
  }
  return JSON.stringify(row);
}

/**
 * Validates one row with the shared schema (the API's own rules and reasons) and, when it
 * passes, serialises the row as it will be sent.
 */
export function checkRow(schema: z.ZodType, fieldNames: readonly string[], value: unknown): RowCheck {
  const { errors } = validateRows(schema, [value]);
  if (errors[0]) return { ok: false, reason: errors[0].reason, details: errors[0].details };
  return { ok: true, json: sentJson(fieldNames, value) };
}

/**
 * A row of a merge (`--merge`, docs/catalogue.md#merge) checked with the API's merge rules: each
 * field it carries by that field's rule, `external_id` required. note: a partial row passes here
 * even when it names no row of the account; only the server knows, and fails it naming its
 * missing fields in the batch's 201.
 */
export function checkMergeRow(rules: MergeRules<unknown> & { required: readonly string[] }, fieldNames: readonly string[], value: unknown): RowCheck {
  const checked = validateMergeRow(rules, value, 0);
  if ('error' in checked) return { ok: false, reason: checked.error.reason, details: checked.error.details };
  return { ok: true, json: sentJson(fieldNames, value) };
}
