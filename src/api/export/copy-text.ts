import { Transform } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

/**
 * PostgreSQL's COPY text (one line a row, fields separated by tabs, `\N` for null, a backslash
 * before a tab, line break or backslash within a field) read as rows of fields, for the export's
 * encoders (export-ndjson.ts, export-csv.ts).
 */

export type CopyFields = (string | null)[];

const ESCAPED: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' };

/** A field's text as stored. note: COPY writes only these escapes (and `\\`) for text out. */
function unescaped(field: string): string {
  return field.includes('\\') ? field.replace(/\\(.)/g, (_, char: string) => ESCAPED[char] ?? char) : field;
}

/** The fields of one line. */
export function copyFields(line: string): CopyFields {
  return line.split('\t').map((field) => (field === '\\N' ? null : unescaped(field)));
}

/**
 * How many bytes of COPY text are gathered before they are encoded. note: postgres.js hands over
 * a row at a time; encoding a row at a time costs more in the calls around it than in the row
 * (bench/README.md, issue 44), and 64 KiB is what a socket reads at once.
 */
const BATCH_BYTES = 64 * 1024;

/**
 * Reads COPY text and writes what `encode` makes of each batch of whole lines (a string that ends
 * with a line break), after `head` (a header, or nothing). note: holds no more than a batch and the
 * line it ends inside; a row's line is at most a stored row's size (docs/imports.md, 1 MiB).
 */
export function copyTextTransform(encode: (lines: string) => string, head = ''): Transform {
  const decoder = new StringDecoder('utf8');
  let gathered: Buffer[] = [];
  let gatheredBytes = 0;
  let rest = '';
  const encodeGathered = (): string => {
    const text = rest + decoder.write(gathered.length === 1 ? gathered[0]! : Buffer.concat(gathered, gatheredBytes));
    gathered = [];
    gatheredBytes = 0;
    const end = text.lastIndexOf('\n') + 1;
    rest = text.slice(end);
    return end === 0 ? '' : encode(text.slice(0, end));
  };
  const transform = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      gathered.push(chunk);
      gatheredBytes += chunk.length;
      if (gatheredBytes < BATCH_BYTES) return done();
      const encoded = encodeGathered();
      // note: as bytes, so that the answer's chunked encoding does not measure the text again
      done(null, encoded === '' ? undefined : Buffer.from(encoded));
    },
    flush(done) {
      const encoded = encodeGathered();
      // note: COPY ends every row with a line break; text left over is a truncated answer
      if (rest + decoder.end() !== '') return done(new Error('the COPY text ended inside a row'));
      done(null, encoded === '' ? undefined : Buffer.from(encoded));
    },
  });
  if (head !== '') transform.push(head);
  return transform;
}

/** Each line of a batch `copyTextTransform` hands over, without its line break. */
export function linesOf(lines: string): string[] {
  return lines.slice(0, -1).split('\n');
}

/**
 * A time as the list answers it (ISO 8601 in UTC, to the millisecond, as Date#toISOString writes
 * it) from its COPY text in UTC with the ISO date style: `2026-11-24 02:00:00.123456+00`.
 * note: the fraction is cut, not rounded, as postgres.js's Date reads it for the list.
 */
export function isoTime(text: string): string {
  // note: PostgreSQL drops a fraction's trailing zeros (`.66+00`), and writes none for a whole second
  let fraction = '';
  for (let at = 20; at < 23 && text[19] === '.' && isDigit(text.charCodeAt(at)); at += 1) fraction += text[at];
  return `${text.slice(0, 10)}T${text.slice(11, 19)}.${fraction.padEnd(3, '0')}Z`;
}

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}
