import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { readJsonRows } from '../../shared/import/file/read-json.js';
import type { InputFormatName } from '../../shared/import/file/source-row.js';

/** A file as `POST /v1/api/imports` takes it: its media type, and a fresh stream of it for each attempt. */
export interface FileBody {
  contentType: 'text/csv' | 'application/x-ndjson';
  open(): Readable;
}

/** NDJSON of a JSON array file, one element a line, read from the file as it is sent. */
async function* ndjsonOfArray(file: string): AsyncGenerator<Buffer> {
  // note: JSON.stringify escapes every line break inside a value, so one element is one line, and
  // the server's row index is the element's index in the array.
  for await (const row of readJsonRows(createReadStream(file))) {
    if ('value' in row) yield Buffer.from(`${JSON.stringify(row.value)}\n`);
  }
}

/**
 * CSV and NDJSON are sent as they are, byte for byte; a JSON array is converted to NDJSON on the
 * fly. Never read whole: a retry re-reads the file from its start (open() again).
 */
export function fileBodyOf(file: string, format: InputFormatName): FileBody {
  switch (format) {
    case 'csv':
      return { contentType: 'text/csv', open: () => createReadStream(file) };
    case 'ndjson':
      return { contentType: 'application/x-ndjson', open: () => createReadStream(file) };
    case 'json':
      return { contentType: 'application/x-ndjson', open: () => Readable.from(ndjsonOfArray(file), { objectMode: false }) };
  }
}
