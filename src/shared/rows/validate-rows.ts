import type { z } from 'zod';

export interface RowError {
  index: number;
  reason: string;
}

export interface RowValidation<Row> {
  /** valid rows, normalised, in request order */
  rows: Row[];
  /** one entry per failing row, sorted by index */
  errors: RowError[];
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    out += typeof part === 'number' ? `[${part}]` : out === '' ? String(part) : `.${String(part)}`;
  }
  return out;
}

/** `"currency: must be exactly USD; price_cents: must be a whole number"`: each failing field once. */
export function formatRowIssues(issues: readonly z.core.$ZodIssue[]): string {
  const byField = new Map<string, string>();
  for (const issue of issues) {
    const field = formatPath(issue.path);
    if (!byField.has(field)) byField.set(field, issue.message);
  }
  return [...byField].map(([field, message]) => (field === '' ? message : `${field}: ${message}`)).join('; ');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Validates every row up front; a failing row never stops the others (docs/rows.md#each-row). */
export function validateRows<Schema extends z.ZodType>(schema: Schema, input: readonly unknown[]): RowValidation<z.output<Schema>> {
  const rows: z.output<Schema>[] = [];
  const errors: RowError[] = [];
  input.forEach((candidate, index) => {
    if (!isPlainObject(candidate)) {
      errors.push({ index, reason: 'row must be an object' });
      return;
    }
    const result = schema.safeParse(candidate);
    if (result.success) rows.push(result.data);
    else errors.push({ index, reason: formatRowIssues(result.error.issues) });
  });
  return { rows, errors };
}
