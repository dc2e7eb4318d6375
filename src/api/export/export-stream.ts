import { pipeline, type Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import type { CatalogueFilters } from '../../shared/repositories/catalogue-rows.js';
import { EXPORT_COLUMNS, openCatalogueExport } from '../../shared/repositories/catalogue-export.js';
import type { ImportKind } from '../../shared/import/import-kinds.js';
import type { Sql } from '../../shared/infra/db.js';
import type { FastifyBaseLogger } from 'fastify';
import { csvRows } from './export-csv.js';
import { ndjsonRows } from './export-ndjson.js';
import { readCopyText } from './copy-text.js';
import { idleWatchdog } from './idle-watchdog.js';

export interface ExportRequest {
  kind: ImportKind;
  accountId: string;
  filters: CatalogueFilters;
  format: 'ndjson' | 'csv';
  gzip: boolean;
  idleMs: number;
}

/**
 * An export's body (docs/catalogue.md#export): the snapshot's COPY text, encoded, compressed when
 * asked, and watched for a client that reads nothing. Answers once PostgreSQL sends rows, so that
 * a failure to start is an error answer. Backpressure runs from the socket to PostgreSQL: each
 * stream holds its buffer and no more, and the database's socket is paused while they are full.
 * However the body ends early (the client gone, idle, the database lost), the statement is
 * cancelled, the transaction rolled back and its connection returned; the body is destroyed, so
 * that a client never takes a cut export for a whole one. `ended` settles (never rejects) once the
 * transaction has ended and its connection is back in the pool, however the export went.
 */
export async function exportBody(sql: Sql, request: ExportRequest, log: FastifyBaseLogger): Promise<{ body: Readable; ended: Promise<void> }> {
  const open = await openCatalogueExport(sql, request.kind, request.accountId, request.filters);
  const columns = EXPORT_COLUMNS[request.kind];
  const watchdog = idleWatchdog(request.idleMs);
  // note: the COPY itself stays out of the pipeline, which would destroy it on an error: an
  // abandoned COPY must still be read to its end (openCatalogueExport)
  const rows = readCopyText(open.copy, request.format === 'csv' ? csvRows(columns) : ndjsonRows(columns));
  pipeline([rows, ...(request.gzip ? [createGzip()] : []), watchdog], (error) => {
    if (error === null || error === undefined) return;
    log.info({ reason: error.message }, 'export ended early; its transaction is rolled back');
    open.abandon(error);
    watchdog.destroy(error);
  });
  const ended = open.ended.catch((error: unknown) => watchdog.destroy(error instanceof Error ? error : new Error(String(error))));
  return { body: watchdog, ended: ended.then(() => undefined) };
}
