import type { Transform } from 'node:stream';
import type { ExportColumn } from '../../shared/repositories/catalogue-export.js';
import { copyFields, copyTextTransform, isoTime } from './copy-text.js';

/** A number as JSON.stringify writes what postgres.js reads for the list: not finite is null. */
const FINITE = /^[-+]?[0-9.]+(?:e[-+]?[0-9]+)?$/i;

/**
 * The export as NDJSON (docs/catalogue.md#export): a row a line, every field as the list answers
 * it (K.1), in the resource's order. Written from the COPY text field by field, never through a
 * row object: the export's cost is this loop (bench/README.md, issue 44).
 */
export function ndjsonRows(columns: readonly ExportColumn[]): Transform {
  const keys = columns.map(({ name }, i) => `${i === 0 ? '{' : ','}${JSON.stringify(name)}:`);
  const encode = (line: string): string => {
    const fields = copyFields(line);
    let out = '';
    for (const [i, column] of columns.entries()) {
      const field = fields[i];
      out += keys[i]!;
      if (field === null || field === undefined) out += 'null';
      else if (column.type === 'text') out += JSON.stringify(field);
      else if (column.type === 'number') out += FINITE.test(field) ? field : 'null';
      else if (column.type === 'boolean') out += field === 't' ? 'true' : 'false';
      else if (column.type === 'json') out += field;
      else out += `"${isoTime(field)}"`;
    }
    return `${out}}\n`;
  };
  return copyTextTransform((lines) => lines.map(encode).join(''));
}
