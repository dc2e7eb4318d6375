import type { z } from 'zod';
import type { RowErrorCode } from './row-error-codes.js';
import type { RowError, RowErrorDetail } from './row-errors.js';

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

/** What a row sent at an issue's path (undefined when it sent nothing there). */
function sentAt(row: unknown, path: readonly PropertyKey[]): unknown {
  let value = row;
  for (const key of path) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/**
 * The row-error code of a zod issue of `row`. The field rules give their own issues a code
 * (field-schemas.ts: issueCode); zod's own issues are named here. note: a missing value reads
 * `required` in every rule's message (typeError), which is how it is told from a wrong type; the
 * message, not the value, decides, because a null array entry (`tags: [null]`) is a wrong type.
 */
export function rowErrorCodeOf(issue: z.core.$ZodIssue, row: unknown): RowErrorCode {
  if (issue.message === 'required') return 'required';
  switch (issue.code) {
    case 'custom': {
      // note: every rule that raises an issue of its own gives it a code; the fallback only
      // keeps an oversight from turning a row error into a 500 (tests check each rule's code).
      return (issue.params as { rowErrorCode?: RowErrorCode } | undefined)?.rowErrorCode ?? 'wrong_type';
    }
    case 'invalid_type':
      return 'wrong_type';
    case 'invalid_value':
      // note: the allowed values are all strings; another JSON type (`currency: 5`) is a wrong
      // type, as in every other field. The value is read from the row rather than asked of zod
      // (reportInput): parsing with options made every valid row about twice as slow.
      return typeof sentAt(row, issue.path) === 'string' ? 'not_allowed' : 'wrong_type';
    case 'too_big':
      return issue.origin === 'array' ? 'too_many_items' : issue.origin === 'string' ? 'too_long' : 'out_of_range';
    case 'too_small':
      // note: an empty photo_urls ("at least one https:// URL is required") is a missing value
      return issue.origin === 'array' || issue.origin === 'string' ? 'required' : 'out_of_range';
    default:
      return 'wrong_type';
  }
}

/**
 * `"currency: must be exactly USD; price_cents: must be a whole number"` and its details: each
 * failing field of `row` once (its first problem), in schema order.
 */
export function describeRowIssues(issues: readonly z.core.$ZodIssue[], row: unknown): { reason: string; details: RowErrorDetail[] } {
  const byField = new Map<string, z.core.$ZodIssue>();
  for (const issue of issues) {
    const field = formatPath(issue.path);
    if (!byField.has(field)) byField.set(field, issue);
  }
  const details = [...byField].map(([field, issue]): RowErrorDetail => ({ field: field === '' ? null : field, code: rowErrorCodeOf(issue, row), message: issue.message }));
  return { reason: reasonOf(details), details };
}

/** The reason text of a row's details: `field: message`, joined with `; `. */
export function reasonOf(details: readonly RowErrorDetail[]): string {
  return details.map(({ field, message }) => (field === null ? message : `${field}: ${message}`)).join('; ');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const NOT_AN_OBJECT: RowErrorDetail = { field: null, code: 'not_an_object', message: 'row must be an object' };

/** One row checked: the row as stored, or why it fails (at `index`). */
export function validateRow<Schema extends z.ZodType>(schema: Schema, candidate: unknown, index: number): { row: z.output<Schema> } | { error: RowError } {
  if (!isPlainObject(candidate)) return { error: { index, reason: NOT_AN_OBJECT.message, details: [{ ...NOT_AN_OBJECT }] } };
  const result = schema.safeParse(candidate);
  return result.success ? { row: result.data } : { error: { index, ...describeRowIssues(result.error.issues, candidate) } };
}

/** Validates every row up front; a failing row never stops the others (docs/rows.md#each-row). */
export function validateRows<Schema extends z.ZodType>(schema: Schema, input: readonly unknown[]): RowValidation<z.output<Schema>> {
  const rows: z.output<Schema>[] = [];
  const errors: RowError[] = [];
  input.forEach((candidate, index) => {
    const checked = validateRow(schema, candidate, index);
    if ('row' in checked) rows.push(checked.row);
    else errors.push(checked.error);
  });
  return { rows, errors };
}
