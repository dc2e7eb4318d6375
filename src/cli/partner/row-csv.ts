import { CSV_ARRAY_SEPARATOR } from '../../shared/import/file/csv-cells.js';
import { printableCell } from './printable.js';

/** A cell quoted as RFC 4180 asks when it holds a quote, a comma or a line break. */
function quoted(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/**
 * A row's value as a CSV cell, in the shape an import file's cell takes
 * (docs/partner-cli.md#input-files): an array's entries separated by `|`, null as an empty cell,
 * numbers and booleans as JSON writes them. note: text is written as stored, with no `'` before a
 * leading `=`, so that the file reads back as an import file; only the terminal controls are
 * written out (printableCell), as everywhere the CLI prints what a server sent.
 */
function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (Array.isArray(value)) return quoted(printableCell(value.map(String).join(CSV_ARRAY_SEPARATOR)));
  return quoted(printableCell(typeof value === 'string' ? value : JSON.stringify(value)));
}

/** The header line: the resource's field names, in its order. */
export function csvHeader(columns: readonly string[]): string {
  return `${columns.join(',')}\n`;
}

/** One row as a CSV line, its cells in `columns`' order. */
export function csvLine(columns: readonly string[], row: Record<string, unknown>): string {
  return `${columns.map((name) => cell(row[name])).join(',')}\n`;
}
