import { Transform, type TransformCallback } from 'node:stream';
import { FileRecordTooLongError } from './file-read-error.js';

const QUOTE = 0x22;
const LF = 0x0a;
const CR = 0x0d;

/**
 * Passes a CSV file's bytes through and stops it at the first record longer than `maxBytes`
 * (FileRecordTooLongError), before csv-parse holds it. note: csv-parse's own `max_record_size`
 * counts the characters of the cells alone, so a record of commas (a million empty cells) passes
 * it while its array grows without end; bytes counted here bound the cells too. A quote toggles
 * quoting, which is exact for any file csv-parse reads (`""` inside quotes toggles twice); a line
 * break outside quotes ends a record.
 */
export class CsvRecordBound extends Transform {
  private quoted = false;
  private recordBytes = 0;
  private line = 1;
  private recordLine = 1;
  private afterCr = false;

  constructor(private readonly maxBytes: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    let { quoted, recordBytes, line, recordLine, afterCr } = this;
    const max = this.maxBytes;
    for (let i = 0; i < chunk.length; i += 1) {
      const byte = chunk[i]!;
      if (byte === LF || byte === CR) {
        // note: lines are counted for the message only; a CRLF is one.
        if (!(byte === LF && afterCr)) line += 1;
        afterCr = byte === CR;
        if (!quoted) {
          recordBytes = 0;
          recordLine = line;
          continue;
        }
      } else {
        afterCr = false;
        if (byte === QUOTE) quoted = !quoted;
      }
      recordBytes += 1;
      if (recordBytes > max) {
        done(new FileRecordTooLongError(max, recordLine));
        return;
      }
    }
    Object.assign(this, { quoted, recordBytes, line, recordLine, afterCr });
    done(null, chunk);
  }
}
