import type { ImportKind } from './import-kinds.js';
import { ROW_COLUMNS, type ColumnType } from '../rows/row-columns.js';
import type { ListingRow } from '../rows/listing-row.js';
import type { MachineRow } from '../rows/machine-row.js';

/**
 * Rows as `COPY ... FROM STDIN` reads them in its text format: a line a row, its columns
 * (row-columns.ts, in that order) separated by tabs, `\N` for null. note: PostgreSQL parses this
 * for less than the JSON of the same rows (bench/README.md, issue 43), and the worker streams the
 * bytes to it as they came from Redis, never decoding them.
 */

const COPY_SPECIALS_ALL = /[\\\n\r\t]/g;
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
const ARRAY_SPECIALS = /["\\]/g;

/**
 * Whether a value holds a character COPY's text format escapes. note: four `indexOf`s, each a
 * scan the engine does in bulk, cost a 500-character description a fraction of one regular
 * expression of the four characters (bench/README.md, issue 43).
 */
const hasCopySpecials = (value: string): boolean =>
  value.indexOf('\\') !== -1 || value.indexOf('\t') !== -1 || value.indexOf('\n') !== -1 || value.indexOf('\r') !== -1;

/** A text value of the COPY text format: backslash, newline, carriage return and tab escaped. */
export function copyText(value: string): string {
  return hasCopySpecials(value) ? value.replace(COPY_SPECIALS_ALL, (c) => COPY_ESCAPES[c]!) : value;
}

/** An array element as an array literal quotes it: a quote and a backslash escaped. */
const arrayElement = (value: string): string => (value.indexOf('"') === -1 && value.indexOf('\\') === -1 ? value : value.replace(ARRAY_SPECIALS, '\\$&'));

/** A text[] as PostgreSQL's array literal reads it: every element quoted, so that none is read as NULL or split at a comma. */
function arrayLiteral(values: readonly string[]): string {
  let literal = '{';
  for (let i = 0; i < values.length; i += 1) literal += `${i === 0 ? '' : ','}"${arrayElement(values[i]!)}"`;
  return `${literal}}`;
}

function copyValue(value: unknown, type: ColumnType): string {
  if (value === null || value === undefined) return '\\N';
  switch (type) {
    case 'text':
      return copyText(value as string);
    case 'boolean':
      return value ? 't' : 'f';
    case 'text[]':
      return copyText(arrayLiteral(value as string[]));
    default:
      // note: whole and finite (the row schemas): its text is what JSON would write, which float8 reads back exactly.
      return (value as number).toString();
  }
}

/**
 * The valid rows of one import in the COPY text format, a line each, in order. With `indexes`
 * (each row's position in the request, `?return=rows`), each line begins with its row's: the
 * worker copies them into a table with that column first (repositories/imports.ts copyRowsIn).
 */
export function encodeCopyRows(kind: ImportKind, rows: readonly (ListingRow | MachineRow)[], indexes?: readonly number[]): string {
  const columns = Object.entries(ROW_COLUMNS[kind]) as [string, ColumnType][];
  let text = '';
  for (let r = 0; r < rows.length; r += 1) {
    const values = rows[r] as unknown as Record<string, unknown>;
    if (indexes !== undefined) text += `${indexes[r]!}\t`;
    for (let c = 0; c < columns.length; c += 1) {
      const [name, type] = columns[c]!;
      text += (c === 0 ? '' : '\t') + copyValue(values[name], type);
    }
    text += '\n';
  }
  return text;
}
