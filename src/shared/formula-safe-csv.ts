import { stringify, type Options, type Stringifier } from 'csv-stringify';
import { stringify as stringifySync } from 'csv-stringify/sync';

/**
 * How every CSV we write is written (the errors CSV and the export the API sends, the partner
 * CLI's --results). note: csv-stringify quotes what needs quoting and, with `escape_formulas`,
 * prefixes with `'` every cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return, so
 * that no cell runs as a formula when the file is opened in a spreadsheet.
 */
const FORMULA_SAFE: Options = { escape_formulas: true };

/** A stringifier stream: records written, CSV read. */
export function formulaSafeCsv(options: Options = {}): Stringifier {
  return stringify({ ...FORMULA_SAFE, ...options });
}

/** Records as CSV text at once, for a writer that already holds them (a chunk of an export). */
export function formulaSafeCsvText(records: readonly (readonly string[])[]): string {
  return stringifySync(records as string[][], FORMULA_SAFE);
}
