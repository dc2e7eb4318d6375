import { pipeline } from 'node:stream';
import type { Readable } from 'node:stream';
import { CsvError, parse } from 'csv-parse';
import { echoedText } from '../../errors/echoed-text.js';
import { csvRecordToRow, CsvHeaderError, mapCsvHeader, type CsvColumns } from './csv-cells.js';
import { CsvRecordBound } from './csv-record-bound.js';
import { FileReadError } from './file-read-error.js';
import { StrictUtf8 } from './strict-utf8.js';
import { FILE_ROW_MAX_BYTES } from './row-bytes.js';
import type { FieldSpec } from './row-fields.js';
import type { SourceRow } from './source-row.js';

const LINE_BREAK = /\r\n|\r|\n/g;

function lineBreaksIn(cells: readonly string[]): number {
  let count = 0;
  for (const cell of cells) count += cell.match(LINE_BREAK)?.length ?? 0;
  return count;
}

const isBlank = (cells: readonly string[]) => cells.every((cell) => cell.trim() === '');

/**
 * csv-parse's errors in our words. note: its own messages quote the cell read so far (a megabyte,
 * control characters and all), so they are never passed on; a code not listed here is named.
 */
const CSV_PROBLEMS: Record<string, string> = {
  CSV_QUOTE_NOT_CLOSED: 'a quoted cell is not closed',
  CSV_INVALID_CLOSING_QUOTE: 'a quote inside a quoted cell is not doubled',
  INVALID_OPENING_QUOTE: 'a quote inside a cell that is not quoted',
  CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE: 'text after the closing quote of a cell',
  CSV_MAX_RECORD_SIZE: 'a record longer than a row may be',
};

/** The problem a csv-parse error names, and the line it was found on when it tells. */
function csvProblem(error: { code?: string; lines?: unknown }): string {
  const problem = CSV_PROBLEMS[error.code ?? ''] ?? `the file does not parse (${error.code ?? 'unknown error'})`;
  return typeof error.lines === 'number' ? `${problem}, on line ${error.lines}` : problem;
}

export interface CsvReadOptions {
  fields: readonly FieldSpec[];
  kind: string;
  /** called once with the mapped header, before the first row */
  onHeader?: (columns: CsvColumns) => void;
  /** the longest record read (FILE_ROW_MAX_BYTES); a longer one stops the file */
  maxRecordBytes?: number;
}

/**
 * Streams the rows of a CSV file (its bytes) whose first record is a header of API field names.
 * Each row's location is the line its record starts on. The file must be UTF-8 (FileNotUtf8Error),
 * and no record may be longer than `maxRecordBytes` (FileRecordTooLongError): the file stops there.
 * note: lines are counted here, from the line breaks inside quoted cells plus one per record,
 * rather than taken from csv-parse's `info.lines`, which counts a CRLF inside a quoted cell as two
 * lines and so drifts in Windows files.
 */
export async function* readCsvRows(input: Readable, options: CsvReadOptions): AsyncGenerator<SourceRow> {
  const maxRecordBytes = options.maxRecordBytes ?? FILE_ROW_MAX_BYTES;
  // note: empty lines come through as one empty cell, so every physical line is accounted for.
  const parser = parse({ bom: true, relax_column_count: true, skip_empty_lines: false, max_record_size: maxRecordBytes });
  // note: the first failure (a record too long, bytes that are not UTF-8, the input's own error)
  // destroys every stage, and the loop below meets it as the parser's error.
  pipeline(input, new CsvRecordBound(maxRecordBytes), new StrictUtf8(), parser, () => undefined);
  let nextLine = 1;
  let columns: CsvColumns | undefined;
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      const line = nextLine;
      nextLine += lineBreaksIn(record) + 1;
      if (isBlank(record)) continue;
      if (columns === undefined) {
        columns = mapCsvHeader(record, options.fields, options.kind);
        options.onHeader?.(columns);
        continue;
      }
      if (record.length !== columns.fields.length) {
        yield { location: line, error: `expected ${columns.fields.length} cells as in the header, got ${record.length}` };
        continue;
      }
      yield { location: line, value: csvRecordToRow(columns, record) };
    }
  } catch (error) {
    if (error instanceof FileReadError) throw error;
    if (error instanceof CsvHeaderError) throw new FileReadError(error.message);
    if (error instanceof CsvError) {
      // note: csv-parse's own line number; records it parsed before the error are dropped unread.
      throw new FileReadError(`CSV syntax error: ${csvProblem(error)}`);
    }
    throw new FileReadError(`cannot read the file: ${echoedText(error instanceof Error ? error.message : String(error))}`);
  } finally {
    // note: a consumer that stops early (a refused file) ends the reading of the input too.
    parser.destroy();
  }
  if (columns === undefined) throw new FileReadError('the file is empty: a CSV file starts with a header line of field names');
}
