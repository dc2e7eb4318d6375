import type { Readable } from 'node:stream';
import { readCsvRows } from '../../shared/import/file/read-csv.js';
import { readJsonRows } from '../../shared/import/file/read-json.js';
import { readNdjsonRows } from '../../shared/import/file/read-ndjson.js';
import type { FieldSpec } from '../../shared/import/file/row-fields.js';
import type { SourceRow } from '../../shared/import/file/source-row.js';
import type { CliOptions } from './args.js';
import type { CliIo } from './cli-io.js';
import { printable } from './printable.js';

/**
 * The rows of the import's file, read by its format. `noteHeader`: say on stderr which CSV columns
 * are not fields of the kind (once a run: the second read of a --background file says nothing).
 */
export function readFileRows(options: Pick<CliOptions, 'format' | 'kind'>, fields: FieldSpec[], stream: Readable, io: CliIo, noteHeader = true): AsyncIterable<SourceRow> {
  switch (options.format) {
    case 'csv':
      return readCsvRows(stream, {
        fields,
        kind: options.kind,
        onHeader: ({ unknown }) => {
          if (noteHeader && unknown.length > 0) io.stderr.write(`${printable(`note: ignoring columns that are not ${options.kind} fields: ${unknown.join(', ')}`)}\n`);
        },
      });
    case 'ndjson':
      return readNdjsonRows(stream);
    case 'json':
      return readJsonRows(stream);
  }
}
