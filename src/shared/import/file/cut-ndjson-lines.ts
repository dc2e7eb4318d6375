import { echoedText } from '../../errors/echoed-text.js';
import { FileReadError } from './file-read-error.js';
import { FILE_ROW_MAX_BYTES } from './row-bytes.js';

const LF = 0x0a;
const CR = 0x0d;

/**
 * What the cutting of an NDJSON file gives, in file order: whole lines as they arrived (the bytes
 * up to a line break, without it; a line break inside is still to be split on), or a line longer
 * than the bound, dropped unread.
 */
export type NdjsonPart = { type: 'lines'; bytes: Buffer } | { type: 'too-long' };

export interface NdjsonCutOptions {
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
 * Cuts an NDJSON file's bytes into whole lines as they arrive, with byte operations only: what
 * is neither decoded nor parsed here is done by NdjsonLines, on whichever thread reads the parts
 * (readNdjsonRows reads them on its own). LF, CRLF (also across two
 * chunks) and a lone CR end a line. A line longer than `maxLineBytes` that has not ended within
 * the bytes that arrived with it is dropped as it arrives, never held: it becomes a `too-long`
 * part. An error of the input stops the file (FileReadError).
 *
 * note: bytes are held only up to the line being read: what follows the last line break of a
 * chunk waits for the next one. A line break is never inside a UTF-8 sequence, so no character is
 * cut, and each part decodes on its own.
 */
export async function* cutNdjsonLines(input: AsyncIterable<Buffer | string>, options: NdjsonCutOptions = {}): AsyncGenerator<NdjsonPart> {
  const maxLineBytes = options.maxLineBytes ?? FILE_ROW_MAX_BYTES;
  /** the start of a line that has not ended yet */
  let partial: Buffer[] = [];
  let partialBytes = 0;
  /** dropping the rest of a line past the bound, up to its line break */
  let dropping = false;
  /** the last chunk ended on a CR: an LF starting the next one ends no other line */
  let afterCr = false;

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
          yield { type: 'too-long' };
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
      yield { type: 'lines', bytes: whole };
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
  if (partialBytes > 0) yield { type: 'lines', bytes: Buffer.concat(partial) };
}
