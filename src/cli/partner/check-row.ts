import type { z } from 'zod';
import { validateRows } from '../../shared/rows/validate-rows.js';
import type { RowErrorDetail } from '../../shared/rows/row-errors.js';

export type RowCheck = { ok: true; json: string } | { ok: false; reason: string; details: RowErrorDetail[] };

/**
 * Validates one row with the shared schema (the API's own rules and reasons) and, when it
 * passes, serialises the row as it will be sent: the input as read, with only the schema's
 * fields. note: the raw input is sent, not the normalised row, because the API normalises
 * again and a truncated value that ends in a space would not survive a second trim.
 */
export function checkRow(schema: z.ZodType, fieldNames: readonly string[], value: unknown): RowCheck {
  const { errors } = validateRows(schema, [value]);
  if (errors[0]) return { ok: false, reason: errors[0].reason, details: errors[0].details };
  const source = value as Record<string, unknown>;
  const row: Record<string, unknown> = {};
  for (const name of fieldNames) {
    if (Object.hasOwn(source, name)) row[name] = source[name];
  }
  return { ok: true, json: JSON.stringify(row) };
}
