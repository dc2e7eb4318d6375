import { cutNdjsonLines, type NdjsonCutOptions } from './cut-ndjson-lines.js';
import { NdjsonLines } from './ndjson-lines.js';
import { FILE_ROW_MAX_BYTES } from './row-bytes.js';
import type { SourceRow } from './source-row.js';

export type NdjsonReadOptions = NdjsonCutOptions;

/**
 * Streams the rows of an NDJSON (JSON Lines) file: one JSON value per line, blank lines skipped;
 * LF, CRLF and a lone CR end a line. A line that is not JSON fails as that row, and so does a line
 * longer than `maxLineBytes`, which is skipped without being held or parsed; the rest of the file
 * goes on. Text that is not UTF-8 stops the file (FileNotUtf8Error).
 *
 * note: the two stages of every NDJSON read, here on one thread: the bytes cut into whole lines
 * (cutNdjsonLines), then their rows (NdjsonLines), so that the second can run on another thread
 * (the preparing threads, issue 43) without a second parser.
 */
export async function* readNdjsonRows(input: AsyncIterable<Buffer | string>, options: NdjsonReadOptions = {}): AsyncGenerator<SourceRow> {
  const lines = new NdjsonLines(true, options.maxLineBytes ?? FILE_ROW_MAX_BYTES);
  for await (const part of cutNdjsonLines(input, options)) {
    if (part.type === 'too-long') yield lines.tooLong();
    else yield* lines.rowsOf(part.bytes);
  }
}
