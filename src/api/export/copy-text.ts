import { Readable } from 'node:stream';

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
 * a row at a time; encoding a row at a time costs more in the calls around it than in the row,
 * and batches of 16 KiB or 256 KiB cost the export more CPU than 32-64 KiB (bench/README.md,
 * issue 44).
 */
const BATCH_BYTES = 64 * 1024;

const LINE_BREAK = 0x0a;

/** What an export's format makes of the COPY text: its first line, and each batch of whole lines. */
export interface CopyTextEncoding {
  /** written before the rows (a CSV header), or nothing */
  head: string;
  /**
   * a batch of whole lines (bytes that end with a line break), encoded. note: whole lines are
   * whole UTF-8: a line break's byte is never part of a longer character's
   */
  encode(lines: Buffer): Buffer;
}

/**
 * The rows of a COPY as `encoding` writes them, a batch at a time, as bytes. The COPY's rows are
 * taken as they come (a listener, not a write per row, which cost the export a tenth of its CPU)
 * and the COPY is paused while what was encoded waits for its reader: backpressure runs on to
 * PostgreSQL, whose socket postgres.js pauses once the COPY's stream is full. note: holds no more
 * than a batch, the line it ends inside and the encoded batch waiting; a row's line is at most a
 * stored row's size (docs/imports.md, 1 MiB). Destroyed, it lets go of the COPY, which its owner
 * then reads to its end (openCatalogueExport).
 */
export function readCopyText(copy: Readable, encoding: CopyTextEncoding): Readable {
  let gathered: Buffer[] = [];
  let gatheredBytes = 0;
  const encodeGathered = (): Buffer | undefined => {
    const bytes = gathered.length === 1 ? gathered[0]! : Buffer.concat(gathered, gatheredBytes);
    const end = bytes.lastIndexOf(LINE_BREAK) + 1;
    // note: the line the batch ends inside waits for the rest of its bytes
    gathered = end === bytes.length ? [] : [bytes.subarray(end)];
    gatheredBytes = bytes.length - end;
    return end === 0 ? undefined : encoding.encode(bytes.subarray(0, end));
  };
  const onData = (chunk: Buffer) => {
    gathered.push(chunk);
    gatheredBytes += chunk.length;
    if (gatheredBytes < BATCH_BYTES) return;
    const encoded = encodedOrFailed();
    if (encoded !== undefined && !rows.push(encoded)) copy.pause();
  };
  const onEnd = () => {
    const encoded = encodedOrFailed();
    if (rows.destroyed) return;
    // note: COPY ends every row with a line break; bytes left over are a truncated answer
    if (gatheredBytes !== 0) return rows.destroy(new Error('the COPY text ended inside a row'));
    if (encoded !== undefined) rows.push(encoded);
    rows.push(null);
  };
  /** note: the listeners run in postgres.js's emit; a failure must end the rows, not the process */
  const encodedOrFailed = (): Buffer | undefined => {
    try {
      return encodeGathered();
    } catch (error) {
      rows.destroy(error instanceof Error ? error : new Error(String(error)));
      return undefined;
    }
  };
  const letGo = () => {
    copy.off('data', onData);
    copy.off('end', onEnd);
  };
  const rows = new Readable({
    read: () => copy.resume(),
    destroy: (error, done) => {
      letGo();
      done(error);
    },
  });
  if (encoding.head !== '') rows.push(encoding.head);
  copy.on('data', onData);
  copy.once('end', onEnd);
  return rows;
}

/** Each line of a batch readCopyText hands its encoding, without its line break. */
export function linesOf(lines: string): string[] {
  return lines.slice(0, -1).split('\n');
}

/**
 * A time as the list answers it (ISO 8601 in UTC, to the millisecond, as Date#toISOString writes
 * it) from its COPY text in UTC with the ISO date style: `2026-11-24 02:00:00.123456+00`, found
 * in `text` at `at` (a field of a batch's lines, which then need not be cut out first).
 * note: the fraction is cut, not rounded, as postgres.js's Date reads it for the list.
 */
export function isoTime(text: string, at = 0): string {
  const fractionAt = at + 20;
  // note: the usual time, with three digits of a fraction or more, in two pieces (an export writes three a row)
  if (text[at + 19] === '.' && isDigit(text.charCodeAt(fractionAt)) && isDigit(text.charCodeAt(fractionAt + 1)) && isDigit(text.charCodeAt(fractionAt + 2))) {
    return `${text.slice(at, at + 10)}T${text.slice(at + 11, at + 23)}Z`;
  }
  // note: PostgreSQL drops a fraction's trailing zeros (`.66+00`), and writes none for a whole second;
  // a field's end (a tab, a line break, the text's end) is no digit
  let fraction = '';
  for (let digit = fractionAt; digit < fractionAt + 3 && text[at + 19] === '.' && isDigit(text.charCodeAt(digit)); digit += 1) fraction += text[digit];
  return `${text.slice(at, at + 10)}T${text.slice(at + 11, at + 19)}.${fraction.padEnd(3, '0')}Z`;
}

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}
