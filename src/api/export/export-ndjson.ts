import type { ExportColumn } from '../../shared/repositories/catalogue-export.js';
import { isoTime, type CopyTextEncoding } from './copy-text.js';
import { holdsRawControl, RAW_CONTROL } from './raw-control.js';

/**
 * A number as the list answers it, JSON.stringify of what postgres.js reads: not finite is null,
 * minus zero is zero. note: otherwise PostgreSQL's text is kept; it reads as the same number,
 * though an exponent may be written differently (`1e-05`, where JavaScript writes `1e-5`).
 */
const FINITE = /^[-+]?[0-9.]+(?:e[-+]?[0-9]+)?$/i;
const numberOf = (field: string): string => (field === '-0' ? '0' : FINITE.test(field) ? field : 'null');

/**
 * What differs between a COPY text field and a JSON string's inside. COPY writes a backslash as
 * `\\` and a backspace, form feed, line break, carriage return and tab as `\b` `\f` `\n` `\r` `\t`,
 * exactly as JSON does; only its `\v`, a quote and the other control characters (written raw) need
 * JSON's escape. A pair is matched whole, so that `\\v` stays a backslash and a `v`.
 */
// eslint-disable-next-line no-control-regex -- control characters are what JSON must escape
const TO_JSON = /\\[\\bfnrtv]|["\x00-\x1f]/g;

function jsonEscapeOf(match: string): string {
  if (match === '"') return '\\"';
  if (match === '\\v') return '\\u000b';
  if (match.length === 2) return match;
  return `\\u${match.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/**
 * A JSON column's COPY text as the JSON it holds. note: JSON text holds no control character, so
 * the one escape COPY adds to it is a doubled backslash.
 */
const jsonOfCopyText = (field: string): string => (field.includes('\\') ? field.replaceAll('\\\\', '\\') : field);

/** COPY's `t`, a boolean true. */
const LETTER_T = 0x74;

/** A field COPY wrote as `\N`. */
const isNull = (lines: string, start: number, stop: number): boolean =>
  stop - start === 2 && lines.charCodeAt(start) === 0x5c && lines.charCodeAt(start + 1) === 0x4e;

/**
 * Where the next `char` of `lines` is at or after `from`, or the end. note: a batch is searched
 * for a quote and a backslash once, ahead of the fields; a field then asks only whether the next
 * one lies inside it, rather than searching every field twice (bench/README.md, issue 44).
 */
function nextOf(lines: string, char: string, from: number): number {
  const at = lines.indexOf(char, from);
  return at === -1 ? lines.length : at;
}

/**
 * The export as NDJSON (docs/catalogue.md#export): a row a line, every field as the list answers
 * it (K.1), in the resource's order. Written from the COPY text field by field, each escape
 * translated in place rather than undone and redone, never through a row object: the export's cost
 * is this loop (bench/README.md, issue 44).
 *
 * note: the bytes are read as latin1, a character a byte, and the answer written back the same
 * way. Every byte this encoder looks for or writes is ASCII, and no byte of a longer UTF-8
 * character is: the catalogue's own text passes through as the bytes PostgreSQL sent, neither
 * decoded nor encoded again, and every string stays one byte a character in any language.
 */
export function ndjsonRows(columns: readonly ExportColumn[]): CopyTextEncoding {
  const types = columns.map(({ type }) => type);
  const last = columns.length - 1;
  const quoted = types.map((type) => type === 'text' || type === 'time');
  // note: what goes before a field: its key, and its opening quote when it has one; with the
  // previous field's closing quote or without. One piece each, so that a field costs two appends.
  const keyOf = (i: number, value: string) => `${i === 0 ? '{' : ','}${JSON.stringify(columns[i]!.name)}:${value}`;
  const before = columns.map((_, i) => keyOf(i, quoted[i] ? '"' : ''));
  const beforeNull = columns.map((_, i) => keyOf(i, 'null'));
  const closedBefore = before.map((piece) => `"${piece}`);
  const closedBeforeNull = beforeNull.map((piece) => `"${piece}`);

  const encodeLines = (lines: string, batchHasControls: boolean): string => {
    let out = '';
    let nextQuote = nextOf(lines, '"', 0);
    let nextBackslash = nextOf(lines, '\\', 0);
    for (let start = 0; start < lines.length; ) {
      const end = lines.indexOf('\n', start);
      let open = false;
      for (let i = 0; i <= last; i += 1) {
        const stop = i === last ? end : lines.indexOf('\t', start);
        // note: a line with fewer fields than columns would have the loop read on into the next
        if (stop === -1 || stop > end) throw new Error('a COPY line has fewer fields than the export has columns');
        if (isNull(lines, start, stop)) {
          out += open ? closedBeforeNull[i]! : beforeNull[i]!;
          open = false;
          start = stop + 1;
          continue;
        }
        out += open ? closedBefore[i]! : before[i]!;
        // note: a field is cut out of the batch only where its text is written or read as a whole
        const type = types[i]!;
        if (type === 'text') {
          if (nextQuote < start) nextQuote = nextOf(lines, '"', start);
          if (nextBackslash < start) nextBackslash = nextOf(lines, '\\', start);
          const field = lines.slice(start, stop);
          const plain = nextQuote >= stop && nextBackslash >= stop && (!batchHasControls || !RAW_CONTROL.test(field));
          out += plain ? field : field.replace(TO_JSON, jsonEscapeOf);
        } else if (type === 'time') {
          out += isoTime(lines, start);
        } else if (type === 'boolean') {
          out += lines.charCodeAt(start) === LETTER_T ? 'true' : 'false';
        } else if (type === 'number') {
          out += numberOf(lines.slice(start, stop));
        } else {
          out += jsonOfCopyText(lines.slice(start, stop));
        }
        open = quoted[i]!;
        start = stop + 1;
      }
      out += open ? '"}\n' : '}\n';
    }
    return out;
  };
  return { head: '', encode: (lines) => Buffer.from(encodeLines(lines.toString('latin1'), holdsRawControl(lines)), 'latin1') };
}
