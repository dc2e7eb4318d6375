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
 * Reads COPY text and writes what `encode` makes of the whole lines of each chunk, after `head`
 * (a header, or nothing). note: holds no more than a chunk and the line it ends inside; a row's
 * line is at most a stored row's size (docs/imports.md, 1 MiB).
 */
export function copyTextTransform(encode: (lines: string[]) => string, head = ''): Transform {
  const decoder = new StringDecoder('utf8');
  let rest = '';
  const transform = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      const lines = (rest + decoder.write(chunk)).split('\n');
      rest = lines.pop()!;
      done(null, lines.length === 0 ? undefined : encode(lines));
    },
    flush(done) {
      // note: COPY ends every row with a line break; text left over is a truncated answer
      done(rest + decoder.end() === '' ? undefined : new Error('the COPY text ended inside a row'));
    },
  });
  if (head !== '') transform.push(head);
  return transform;
}

/**
 * A time as the list answers it (ISO 8601 in UTC, to the millisecond, as Date#toISOString writes
 * it) from its COPY text in UTC with the ISO date style: `2026-11-24 02:00:00.123456+00`.
 * note: the fraction is cut, not rounded, as postgres.js's Date reads it for the list.
 */
export function isoTime(text: string): string {
  const dot = text.indexOf('.', 19);
  const fraction = dot === -1 ? '000' : `${text.slice(dot + 1, dot + 4)}00`.slice(0, 3);
  return `${text.slice(0, 10)}T${text.slice(11, 19)}.${fraction}Z`;
}
