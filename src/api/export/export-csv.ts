import type { ExportColumn } from '../../shared/repositories/catalogue-export.js';
import { CSV_ARRAY_SEPARATOR } from '../../shared/import/file/csv-cells.js';
import { formulaSafeCsvText } from '../../shared/formula-safe-csv.js';
import { copyFields, isoTime, linesOf, type CopyTextEncoding } from './copy-text.js';

/**
 * A field as a CSV cell, in the shape an import file's cell takes (docs/imports.md#whole-files):
 * an array's entries separated by `|`, null as an empty cell, a boolean `true` or `false`.
 */
function cellOf(column: ExportColumn, field: string | null | undefined): string {
  if (field === null || field === undefined) return '';
  if (column.type === 'boolean') return field === 't' ? 'true' : 'false';
  if (column.type === 'json') return (JSON.parse(field) as unknown[]).map(String).join(CSV_ARRAY_SEPARATOR);
  if (column.type === 'time') return isoTime(field);
  return field;
}

/**
 * The export as CSV (docs/catalogue.md#export): a header of the field names, then a row a line,
 * its cells escaped as the errors CSV escapes them (formulaSafeCsvText).
 */
export function csvRows(columns: readonly ExportColumn[]): CopyTextEncoding {
  const records = (lines: string) => linesOf(lines).map((line) => {
    const fields = copyFields(line);
    return columns.map((column, i) => cellOf(column, fields[i]));
  });
  return {
    head: formulaSafeCsvText([columns.map(({ name }) => name)]),
    encode: (lines) => Buffer.from(formulaSafeCsvText(records(lines.toString('utf8')))),
  };
}
