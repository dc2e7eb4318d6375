import type { ExportColumn } from '../../shared/repositories/catalogue-export.js';
import { isoTime, type CopyTextEncoding } from './copy-text.js';

/**
 * A number as the list answers it, JSON.stringify of what postgres.js reads: not finite is null,
 * minus zero is zero. note: otherwise PostgreSQL's text is kept; it reads as the same number,
 * though an exponent may be written differently (`1e-05`, where JavaScript writes `1e-5`).
 */
const FINITE = /^[-+]?[0-9.]+(?:e[-+]?[0-9]+)?$/i;
const numberOf = (field: string): string => (field === '-0' ? '0' : FINITE.test(field) ? field : 'null');

/**
 * A control character COPY writes raw (all but a backspace, form feed, line break, carriage return,
 * tab and vertical tab, which it escapes). note: looked for once a batch, where it is all but never
 * found, so that a field is then tested with two `indexOf`s (a quote, a backslash), which scan a
 * long description some thirty times faster than one regular expression of the three (bench/README.md,
 * issue 44).
 */
// eslint-disable-next-line no-control-regex -- control characters are what JSON must escape
const RAW_CONTROL = /[\x00-\x07\x0e-\x1f]/;

/** A field that is already a JSON string's inside: no quote and no backslash, and its batch holds no raw control character. */
const isPlain = (field: string, batchHasControls: boolean): boolean =>
  field.indexOf('"') === -1 && field.indexOf('\\') === -1 && (!batchHasControls || !RAW_CONTROL.test(field));

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

/** A text field's COPY text as a JSON string, as JSON.stringify writes the stored text. */
function jsonStringOfCopyText(field: string, batchHasControls: boolean): string {
  return isPlain(field, batchHasControls) ? `"${field}"` : `"${field.replace(TO_JSON, jsonEscapeOf)}"`;
}

/**
 * A JSON column's COPY text as the JSON it holds. note: JSON text holds no control character, so
 * the one escape COPY adds to it is a doubled backslash.
 */
function jsonOfCopyText(field: string): string {
  return field.includes('\\') ? field.replaceAll('\\\\', '\\') : field;
}

function jsonValueOf(column: ExportColumn, field: string, batchHasControls: boolean): string {
  if (field === '\\N') return 'null';
  switch (column.type) {
    case 'text':
      return jsonStringOfCopyText(field, batchHasControls);
    case 'number':
      return numberOf(field);
    case 'boolean':
      return field === 't' ? 'true' : 'false';
    case 'json':
      return jsonOfCopyText(field);
    case 'time':
      return `"${isoTime(field)}"`;
  }
}

/**
 * The export as NDJSON (docs/catalogue.md#export): a row a line, every field as the list answers
 * it (K.1), in the resource's order. Written from the COPY text field by field, each escape
 * translated in place rather than undone and redone, never through a row object: the export's cost
 * is this loop (bench/README.md, issue 44).
 */
export function ndjsonRows(columns: readonly ExportColumn[]): CopyTextEncoding {
  const keys = columns.map(({ name }, i) => `${i === 0 ? '{' : ','}${JSON.stringify(name)}:`);
  const last = columns.length - 1;
  const encode = (lines: string): string => {
    let out = '';
    const batchHasControls = RAW_CONTROL.test(lines);
    for (let start = 0; start < lines.length; ) {
      const end = lines.indexOf('\n', start);
      for (let i = 0; i <= last; i += 1) {
        const stop = i === last ? end : lines.indexOf('\t', start);
        out += keys[i]! + jsonValueOf(columns[i]!, lines.slice(start, stop), batchHasControls);
        start = stop + 1;
      }
      out += '}\n';
    }
    return out;
  };
  return { head: '', encode };
}
