import type { z } from 'zod';
import { ListingFieldsSchema, ListingRowSchema, type ListingRow } from './listing-row.js';
import { MachineRowSchema, type MachineRow } from './machine-row.js';
import type { RowError, RowErrorDetail } from './row-errors.js';
import { describeRowIssues, reasonOf } from './validate-rows.js';

/**
 * A row of an import with `update=merge` (docs/catalogue.md#merge): it changes only the fields it
 * carries in the row its `external_id` names, and creates that row when there is none and it is a
 * whole valid row.
 */
export interface MergeRowFields {
  /** the columns the row carries, which a merge changes (thumbnail_url with photo_urls) */
  present: string[];
  /** the required fields it does not carry: a row with some cannot be created, only merged */
  missing: string[];
  /** its position in the request or file: a row that can neither merge nor be created fails there */
  index: number;
}

/**
 * The values of a merge row, normalised as a full row's: every field of the row when it is whole
 * (defaults applied, so that it can be created), else only those it carries.
 */
export type MergeRow<Row> = Partial<Row> & Pick<Row & { external_id: string }, 'external_id'> & MergeRowFields;

/** How one kind's rows merge. */
export interface MergeRules<Row> {
  /** every field with its own rule, in the order reasons name them */
  fields: Readonly<Record<string, z.ZodType>>;
  /** the whole row's rule: a whole row is parsed by it */
  row: z.ZodType<Row>;
  /** columns a field sets besides itself: the column, and its value from the field's */
  derived: Readonly<Record<string, { from: string; value: (field: unknown) => unknown }>>;
}

function mergeRules<Row>(fields: z.ZodObject, row: z.ZodType<Row>, derived: MergeRules<Row>['derived'] = {}): MergeRules<Row> & { required: string[] } {
  const shape = fields.shape as Record<string, z.ZodType>;
  // note: a field is required when its rule refuses its absence
  const required = Object.keys(shape).filter((name) => !shape[name]!.safeParse(undefined).success);
  return { fields: shape, row, derived, required };
}

export const MERGE_RULES = {
  // note: the thumbnail is the first photo; it changes with photo_urls
  listings: mergeRules<ListingRow>(ListingFieldsSchema, ListingRowSchema, { thumbnail_url: { from: 'photo_urls', value: (urls) => (urls as string[])[0] } }),
  machines: mergeRules<MachineRow>(MachineRowSchema, MachineRowSchema),
};

const EXTERNAL_ID_REQUIRED: RowErrorDetail = { field: 'external_id', code: 'required', message: 'required with update=merge' };
const NOT_AN_OBJECT: RowErrorDetail = { field: null, code: 'not_an_object', message: 'row must be an object' };

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Checks a merge row: each field it carries by that field's rule, as in a full row (so `null`
 * clears an optional field, sets a boolean's default, and fails a required one); a row without an
 * `external_id` fails. Unknown fields are dropped, as in a full row.
 */
export function validateMergeRow<Row>(rules: MergeRules<Row> & { required: readonly string[] }, candidate: unknown, index: number): { row: MergeRow<Row> } | { error: RowError } {
  if (!isPlainObject(candidate)) return { error: { index, reason: NOT_AN_OBJECT.message, details: [{ ...NOT_AN_OBJECT }] } };
  const issues: z.core.$ZodIssue[] = [];
  const values: Record<string, unknown> = {};
  const present: string[] = [];
  for (const [name, rule] of Object.entries(rules.fields)) {
    if (!Object.hasOwn(candidate, name)) continue;
    const checked = rule.safeParse(candidate[name]);
    if (checked.success) {
      values[name] = checked.data;
      present.push(name);
    } else for (const issue of checked.error.issues) issues.push({ ...issue, path: [name, ...issue.path] });
  }
  const withoutId = typeof values['external_id'] !== 'string' && !issues.some((issue) => issue.path[0] === 'external_id');
  if (withoutId || issues.length > 0) {
    const described = describeRowIssues(issues, candidate);
    const details = withoutId ? [{ ...EXTERNAL_ID_REQUIRED }, ...described.details] : described.details;
    return { error: { index, reason: reasonOf(details), details } };
  }
  const missing = rules.required.filter((name) => !present.includes(name));
  for (const [column, { from, value }] of Object.entries(rules.derived)) {
    if (!present.includes(from)) continue;
    present.push(column);
    values[column] = value(values[from]);
  }
  // note: a whole row is normalised as a full one, defaults included, so that it can be created
  const whole = missing.length === 0 ? rules.row.safeParse(candidate) : undefined;
  if (whole !== undefined && !whole.success) return { error: { index, ...describeRowIssues(whole.error.issues, candidate) } };
  const row = whole?.success === true ? (whole.data as Record<string, unknown>) : values;
  return { row: Object.assign(row, { present, missing, index }) as MergeRow<Row> };
}
