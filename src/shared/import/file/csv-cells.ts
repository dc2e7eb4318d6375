import { echoedText } from '../../errors/echoed-text.js';
import type { FieldSpec } from './row-fields.js';

/** Separator of the entries of an array field in one CSV cell: `pla|petg|tpu`. */
export const CSV_ARRAY_SEPARATOR = '|';

// A plain decimal number: no hex, no "Infinity", no thousands separators, no blanks inside.
const NUMBER_CELL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const BOOLEAN_CELL = /^(?:true|false)$/i;

/**
 * Turns one CSV cell into the JSON value the shared schema expects for its field. A cell that
 * does not fit the field's type is left as the string it was, so the schema (not this code)
 * says what is wrong with it: `"12.5"` for `price_cents` becomes 12.5 and fails as "must be a
 * whole number", `"abc"` stays a string and fails the same way. `undefined` means absent.
 */
export function coerceCell(field: Pick<FieldSpec, 'type' | 'maxEntries'>, cell: string): unknown {
  const trimmed = cell.trim();
  // note: an empty cell is an absent field; the schema then applies its default or says "required".
  if (trimmed === '') return undefined;
  switch (field.type) {
    case 'number':
      return NUMBER_CELL.test(trimmed) ? Number(trimmed) : cell;
    case 'boolean':
      return BOOLEAN_CELL.test(trimmed) ? trimmed.toLowerCase() === 'true' : cell;
    case 'array': {
      const entries = arrayEntries(cell, field.maxEntries);
      return entries.length === 0 ? undefined : entries;
    }
    case 'string':
      return cell;
  }
}

/**
 * The non-empty entries of an array cell, trimmed; with a cap, at most one past it, so that the
 * schema still refuses the row (`tags: at most 100 entries`) while a cell of a million `|` is never
 * split into a million strings.
 */
export function arrayEntries(cell: string, maxEntries = Number.POSITIVE_INFINITY): string[] {
  const entries: string[] = [];
  let start = 0;
  while (entries.length <= maxEntries) {
    const end = cell.indexOf(CSV_ARRAY_SEPARATOR, start);
    const entry = cell.slice(start, end === -1 ? undefined : end).trim();
    if (entry !== '') entries.push(entry);
    if (end === -1) break;
    start = end + CSV_ARRAY_SEPARATOR.length;
  }
  return entries;
}

export interface CsvColumns {
  /** for each cell position, the field it fills, or undefined for a column the schema lacks */
  fields: (FieldSpec | undefined)[];
  /** header names that are not fields of the row schema (their cells are ignored) */
  unknown: string[];
}

export class CsvHeaderError extends Error {}

/** Maps a header row onto the schema's fields; refuses duplicates and a header with no known field. */
export function mapCsvHeader(header: readonly string[], fields: readonly FieldSpec[], kind: string): CsvColumns {
  const byName = new Map(fields.map((field) => [field.name, field]));
  const seen = new Set<string>();
  const unknown: string[] = [];
  const mapped = header.map((raw) => {
    const name = raw.trim();
    if (name === '') return undefined;
    if (seen.has(name)) throw new CsvHeaderError(`the header names the column ${echoedText(name, { quoted: true })} twice`);
    seen.add(name);
    const field = byName.get(name);
    if (!field) unknown.push(name);
    return field;
  });
  if (!mapped.some((field) => field !== undefined)) {
    throw new CsvHeaderError(
      `the first line must be a header naming ${kind} fields (${fields.map((f) => f.name).join(', ')}); got ${echoedText(header.join(','), { quoted: true })}`,
    );
  }
  return { fields: mapped, unknown };
}

/** One data record as a row object: only known fields, empty cells left out. */
export function csvRecordToRow(columns: CsvColumns, cells: readonly string[]): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  columns.fields.forEach((field, position) => {
    if (!field) return;
    const value = coerceCell(field, cells[position] ?? '');
    if (value !== undefined) row[field.name] = value;
  });
  return row;
}
