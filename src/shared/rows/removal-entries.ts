import { normaliseExternalId } from './external-id.js';
import type { RowError, RowErrorDetail } from './row-errors.js';
import { reasonOf } from './validate-rows.js';

/**
 * The entries of an archive or delete request (docs/catalogue.md#archive-and-delete): `{external_ids:
 * [...]}` or `{ids: [...]}`, each naming one row. The rules here are the API's and the partner
 * CLI's; whether an entry names a row of the account is the database's to say.
 */

/** How a request names its rows: `external_ids` (the partner's ids) or `ids` (ours). */
export const ENTRY_FORMS = ['external_id', 'id'] as const;
export type EntryForm = (typeof ENTRY_FORMS)[number];

/** One entry the worker resolves: its index in the request and the id it names the row by. */
export interface RemovalEntry {
  index: number;
  key: string;
}

/** Entries a request may send. */
export const MAX_REMOVAL_ENTRIES = 1_000;

/** The body's array, by the form of its entries. */
export const ENTRY_ARRAYS: Record<EntryForm, 'external_ids' | 'ids'> = { external_id: 'external_ids', id: 'ids' };

/** Our ids: the UUIDs the service gives rows, in either case. note: the column is a uuid, on which PostgreSQL raises for any other text. */
const ROW_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const NOT_A_STRING = { code: 'wrong_type', message: 'must be a string' } as const;
const NOT_AN_ID = { code: 'invalid_id', message: 'must be an id of ours (a UUID)' } as const;

/**
 * One entry as the row it names is looked up by (an `external_id` trimmed as a row's is, an id in
 * lower case, so that two spellings of one row are one), or its problem.
 */
export function checkEntry(form: EntryForm, value: unknown): { key: string } | RowErrorDetail {
  if (typeof value !== 'string') return { field: form, ...NOT_A_STRING };
  if (form === 'id') return ROW_ID.test(value) ? { key: value.toLowerCase() } : { field: form, ...NOT_AN_ID };
  const id = normaliseExternalId(value);
  return typeof id === 'string' ? { key: id } : { field: form, code: id.code, message: id.problem };
}

/** An entry that failed, with the key it names when it is well formed. */
export function entryError(form: EntryForm, index: number, details: RowErrorDetail[], key?: string): RowError {
  return { index, ...(key === undefined ? {} : form === 'id' ? { id: key } : { external_id: key }), reason: reasonOf(details), details };
}

/** The problem of an entry that names no row of the account. */
export const notFoundDetail = (form: EntryForm, kind: string): RowErrorDetail => ({
  field: form,
  code: 'not_found',
  message: `names no ${kind === 'machines' ? 'machine' : 'listing'} of this account`,
});

const duplicateDetail = (form: EntryForm): RowErrorDetail => ({ field: form, code: 'duplicate', message: 'names the same row as an earlier entry' });

/** Why a body is refused as a whole, before any entry is looked at. */
export type RemovalBodyRefusal =
  /** not an object with exactly one of the two arrays */
  | { refused: 'no-entries-array' }
  | { refused: 'no-entries' }
  | { refused: 'too-many-entries'; received: number };

/** A body's entries, checked: the well-formed first mention of each row, and the errors of the others. */
export interface CheckedRemovalBody {
  by: EntryForm;
  total: number;
  entries: RemovalEntry[];
  errors: RowError[];
}

/**
 * Checks the body's shape and every entry: a malformed entry fails as its field; an entry that
 * names the same row as an earlier well-formed one fails `duplicate`, whether that earlier one
 * names a row of the account or not (so that the outcome of an entry never depends on another's
 * lookup). `errors` in index order.
 */
export function checkRemovalBody(body: unknown): CheckedRemovalBody | RemovalBodyRefusal {
  const object = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
  const sent = (['external_id', 'id'] as const).filter((form) => object?.[ENTRY_ARRAYS[form]] !== undefined);
  if (sent.length !== 1) return { refused: 'no-entries-array' };
  const by = sent[0]!;
  const input = object![ENTRY_ARRAYS[by]];
  if (!Array.isArray(input)) return { refused: 'no-entries-array' };
  if (input.length === 0) return { refused: 'no-entries' };
  if (input.length > MAX_REMOVAL_ENTRIES) return { refused: 'too-many-entries', received: input.length };
  const seen = new Set<string>();
  const entries: RemovalEntry[] = [];
  const errors: RowError[] = [];
  input.forEach((value, index) => {
    const checked = checkEntry(by, value);
    if (!('key' in checked)) errors.push(entryError(by, index, [checked]));
    else if (seen.has(checked.key)) errors.push(entryError(by, index, [duplicateDetail(by)], checked.key));
    else {
      seen.add(checked.key);
      entries.push({ index, key: checked.key });
    }
  });
  return { by, total: input.length, entries, errors };
}

/** Errors of two lists in one, by index. */
export function byIndex(...lists: readonly RowError[][]): RowError[] {
  return lists.flat().sort((a, b) => a.index - b.index);
}
