import { echoedText } from '../../errors/echoed-text.js';
import { FileNotUtf8Error, FileReadError } from './file-read-error.js';
import { FILE_ROW_MAX_BYTES } from './row-bytes.js';
import type { SourceRow } from './source-row.js';

const LF = 0x0a;
const CR = 0x0d;
const LINE_BREAK = /\r\n|\r|\n/;

export interface NdjsonReadOptions {
  /** the longest line read as a row; a longer one fails as that row, unparsed (FILE_ROW_MAX_BYTES) */
  maxLineBytes?: number;
}

/** The first line break of the chunk (LF or CR), or -1. */
function firstBreakIn(chunk: Buffer): number {
  const lf = chunk.indexOf(LF);
  const cr = chunk.indexOf(CR);
  return lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
}

/** The last line break of the chunk (LF or CR), or -1. */
function lastBreakIn(chunk: Buffer): number {
  return Math.max(chunk.lastIndexOf(LF), chunk.lastIndexOf(CR));
}

/**
 * Streams the rows of an NDJSON (JSON Lines) file: one JSON value per line, blank lines skipped;
 * LF, CRLF and a lone CR end a line. A line that is not JSON fails as that row, and so does a line
 * longer than `maxLineBytes`, which is skipped without being held or parsed; the rest of the file
 * goes on. Text that is not UTF-8 stops the file (FileNotUtf8Error).
 *
 * note: bytes are held only up to the line being read: what follows the last line break of what
 * has arrived waits for the next chunk, and a line past the bound is dropped as it arrives. The
 * whole lines of a chunk are decoded at once (a line break is never inside a UTF-8 sequence, so
 * no character is cut), then split: one decode per chunk rather than per line.
 */
export async function* readNdjsonRows(input: AsyncIterable<Buffer | string>, options: NdjsonReadOptions = {}): AsyncGenerator<SourceRow> {
  const maxLineBytes = options.maxLineBytes ?? FILE_ROW_MAX_BYTES;
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  let line = 0;
  /** the start of a line that has not ended yet */
  let partial: Buffer[] = [];
  let partialBytes = 0;
  /** dropping the rest of a line past the bound, up to its line break */
  let dropping = false;
  /** the last chunk ended on a CR: an LF starting the next one ends no other line */
  let afterCr = false;

  const decode = (bytes: Buffer): string => {
    try {
      return decoder.decode(bytes);
    } catch {
      throw new FileNotUtf8Error();
    }
  };

  function* rowsOf(text: string): Generator<SourceRow> {
    // note: a block without a CR (most files) is split on LF alone, several times faster than the pattern
    for (const raw of text.includes('\r') ? text.split(LINE_BREAK) : text.split('\n')) {
      line += 1;
      const content = line === 1 ? raw.replace(/^\uFEFF/, '') : raw;
      // note: a line of more UTF-16 units than bytes allowed has more bytes too; below a third of
      // them, it cannot have more (a unit is at most three bytes of UTF-8).
      if (content.length * 3 > maxLineBytes && Buffer.byteLength(content) > maxLineBytes) {
        yield { location: line, error: tooLong(maxLineBytes) };
        continue;
      }
      if (content.trim() === '') continue;
      try {
        yield { location: line, value: JSON.parse(content) as unknown };
      } catch (error) {
        yield { location: line, error: `invalid JSON: ${(error as Error).message}` };
      }
    }
  }

  /** What follows the line break at `at`: a CRLF is one break, also across two chunks. */
  const restAfter = (chunk: Buffer, at: number): Buffer => {
    if (chunk[at] === CR) {
      if (at + 1 === chunk.length) afterCr = true;
      else if (chunk[at + 1] === LF) return chunk.subarray(at + 2);
    }
    return chunk.subarray(at + 1);
  };

  try {
    for await (const received of input) {
      let chunk = typeof received === 'string' ? Buffer.from(received, 'utf8') : received;
      if (afterCr && chunk[0] === LF) chunk = chunk.subarray(1);
      afterCr = false;
      if (dropping) {
        const end = firstBreakIn(chunk);
        if (end === -1) continue;
        dropping = false;
        chunk = restAfter(chunk, end);
      }
      if (chunk.length === 0) continue;
      const last = lastBreakIn(chunk);
      if (last === -1) {
        partialBytes += chunk.length;
        if (partialBytes > maxLineBytes) {
          line += 1;
          yield { location: line, error: tooLong(maxLineBytes) };
          partial = [];
          partialBytes = 0;
          dropping = true;
        } else {
          partial.push(chunk);
        }
        continue;
      }
      // note: a CRLF's CR stays out of the lines, or it would split off one more (empty) line.
      const wholeEnd = chunk[last] === LF && last > 0 && chunk[last - 1] === CR ? last - 1 : last;
      const lines = chunk.subarray(0, wholeEnd);
      const whole = partialBytes === 0 ? lines : Buffer.concat([...partial, lines]);
      partial = [];
      partialBytes = 0;
      yield* rowsOf(decode(whole));
      const rest = restAfter(chunk, last);
      if (rest.length > 0) {
        partial.push(rest);
        partialBytes = rest.length;
      }
    }
  } catch (error) {
    if (error instanceof FileReadError) throw error;
    throw new FileReadError(`cannot read the file: ${echoedText(error instanceof Error ? error.message : String(error))}`);
  }
  if (partialBytes > 0) yield* rowsOf(decode(Buffer.concat(partial)));
}

const tooLong = (maxLineBytes: number) => `line longer than ${maxLineBytes} bytes`;
