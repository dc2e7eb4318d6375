import { FileNotUtf8Error } from './file-read-error.js';
import { FILE_ROW_MAX_BYTES } from './row-bytes.js';
import type { SourceRow } from './source-row.js';

const LINE_BREAK = /\r\n|\r|\n/;

/**
 * The rows of the parts an NDJSON file was cut into (cutNdjsonLines), given to it in file order:
 * one JSON value per line, blank lines skipped. A line that is not JSON fails as that row, and so
 * does a line longer than `maxLineBytes`; the rest goes on. Text that is not UTF-8 throws
 * FileNotUtf8Error. A row's location is its line among the lines given to this reader (1-based):
 * the file's line when it reads the whole file. The first line given has its BOM removed when
 * `atFileStart`: a BOM counts only at the start of the file.
 */
export class NdjsonLines {
  private line = 0;
  private readonly decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

  constructor(
    private readonly atFileStart: boolean,
    private readonly maxLineBytes: number = FILE_ROW_MAX_BYTES,
  ) {}

  /** The rows of a `lines` part. note: decoded at once, then split: one decode per part rather than per line. */
  *rowsOf(bytes: Uint8Array): Generator<SourceRow> {
    let text: string;
    try {
      text = this.decoder.decode(bytes);
    } catch {
      throw new FileNotUtf8Error();
    }
    // note: text without a CR (most files) is split on LF alone, several times faster than the pattern
    for (const raw of text.includes('\r') ? text.split(LINE_BREAK) : text.split('\n')) {
      this.line += 1;
      const content = this.line === 1 && this.atFileStart ? raw.replace(/^\uFEFF/, '') : raw;
      // note: a line of more UTF-16 units than bytes allowed has more bytes too; below a third of
      // them, it cannot have more (a unit is at most three bytes of UTF-8).
      if (content.length * 3 > this.maxLineBytes && Buffer.byteLength(content) > this.maxLineBytes) {
        yield this.tooLongAt(this.line);
        continue;
      }
      if (content.trim() === '') continue;
      try {
        yield { location: this.line, value: JSON.parse(content) as unknown };
      } catch (error) {
        yield { location: this.line, error: `invalid JSON: ${(error as Error).message}` };
      }
    }
  }

  /** The row of a `too-long` part: a line past the bound, dropped unread. */
  tooLong(): SourceRow {
    this.line += 1;
    return this.tooLongAt(this.line);
  }

  private tooLongAt(location: number): SourceRow {
    return { location, error: `line longer than ${this.maxLineBytes} bytes` };
  }
}
