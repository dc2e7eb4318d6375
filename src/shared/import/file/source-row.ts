/**
 * One record read from an input file, before validation. `location` is where it sits in the
 * file: the 1-based line its record starts on (CSV, NDJSON) or its 0-based position in the
 * top-level array (JSON), as `InputFormat.location` says.
 */
export type SourceRow =
  | { location: number; value: unknown }
  /** a record that could not even be read as a row (bad NDJSON line, wrong CSV cell count) */
  | { location: number; error: string };

export type InputFormatName = 'csv' | 'json' | 'ndjson';

export interface InputFormat {
  name: InputFormatName;
  /** what a row's location is: a line of the file, or an index into its top-level array */
  location: 'line' | 'index';
}

export const INPUT_FORMATS: Record<InputFormatName, InputFormat> = {
  csv: { name: 'csv', location: 'line' },
  ndjson: { name: 'ndjson', location: 'line' },
  json: { name: 'json', location: 'index' },
};

const BY_EXTENSION: Record<string, InputFormatName> = {
  '.csv': 'csv',
  '.json': 'json',
  '.ndjson': 'ndjson',
  '.jsonl': 'ndjson',
};

/** The format named by the file's extension (case-insensitive), or undefined. */
export function formatOfPath(path: string): InputFormatName | undefined {
  const match = /\.[^./\\]+$/.exec(path);
  return match ? BY_EXTENSION[match[0].toLowerCase()] : undefined;
}
