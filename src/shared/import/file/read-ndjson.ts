import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { FileReadError } from './file-read-error.js';
import type { SourceRow } from './source-row.js';

/**
 * Streams the rows of an NDJSON (JSON Lines) file: one JSON value per line, blank lines skipped.
 * A line that is not JSON fails as that row; the rest of the file goes on.
 */
export async function* readNdjsonRows(input: Readable): AsyncGenerator<SourceRow> {
  // note: crlfDelay Infinity makes a CRLF one line break however the chunks fall.
  // note: readline hands an error of its input to this loop itself; forwarding it as well made a
  // second 'error' event on the interface, with no listener left: an uncaught exception.
  const lines = createInterface({ input, crlfDelay: Infinity });
  let line = 0;
  try {
    for await (const raw of lines) {
      line += 1;
      const text = line === 1 ? raw.replace(/^\uFEFF/, '') : raw;
      if (text.trim() === '') continue;
      try {
        yield { location: line, value: JSON.parse(text) as unknown };
      } catch (error) {
        yield { location: line, error: `invalid JSON: ${(error as Error).message}` };
      }
    }
  } catch (error) {
    throw new FileReadError(`cannot read the file: ${error instanceof Error ? error.message : String(error)}`);
  }
}
