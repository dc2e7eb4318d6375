import { Worker, type ConnectionOptions } from 'bullmq';
import type { Counter } from 'prom-client';
import { FILE_IMPORT_QUEUE_NAME, type FileImportJobResult, type FileImportQueue } from '../shared/import/file-import-queue.js';
import type { Config } from '../shared/infra/config.js';
import type { Sql } from '../shared/infra/db.js';
import type { Logger } from '../shared/infra/logger.js';
import { startFileImportFallback, FILE_IMPORTS_POLL_MS } from './file-import-fallback.js';
import { createFileImportProcessor } from './file-import-processor.js';
import { closeQueueWorker } from './close-queue-worker.js';

export interface FileImportsSettings {
  /** how long the fallback waits between its looks (file-import-fallback.ts) */
  pollMs?: number;
  /** counts the rows the chunks create or update (bulk_import_worker_rows_written_total, source `file`) */
  rowsWritten?: Counter<'kind' | 'source'>;
}

export interface FileImportsClients {
  sql: Sql;
  /** the worker's own connection, waiting for Redis (role `blocking`) */
  connection: ConnectionOptions;
  /** the queue the fallback adds and retries jobs on, on a connection that fails fast */
  queue: FileImportQueue;
}

export interface FileImports {
  worker: Worker<unknown, FileImportJobResult>;
  /** lets the chunk under way commit, hands its job back to the queue, then stops */
  stop(): Promise<void>;
}

/**
 * Writes the file imports, in every worker process: a BullMQ worker on `file-imports` runs each
 * import's job (file-import-processor.ts), and a fallback gives a job to any import left without
 * a live one (file-import-fallback.ts); an import's job adds FILE_IMPORT_HELPERS jobs that let
 * the other workers write its chunks too. note: concurrency 1, apart from the imports worker: a
 * file import takes FILE_IMPORT_WRITERS database connections and never a bulk request's job slot,
 * so bulk requests are not held up behind a million rows, and several workers write one file, or
 * several files, at once.
 */
export function startFileImports(
  config: Pick<Config, 'redisPrefix' | 'workerLockDurationMs' | 'fileImportWriters' | 'fileImportHelpers'>,
  clients: FileImportsClients,
  log: Logger,
  settings: FileImportsSettings = {},
): FileImports {
  let stopping = false;
  const processor = createFileImportProcessor(clients.sql, log, {
    stopping: () => stopping,
    writers: config.fileImportWriters,
    helpers: { count: config.fileImportHelpers, queue: clients.queue },
    ...(settings.rowsWritten === undefined ? {} : { rowsWritten: settings.rowsWritten }),
  });
  const worker = new Worker<unknown, FileImportJobResult>(FILE_IMPORT_QUEUE_NAME, processor, {
    connection: clients.connection,
    prefix: config.redisPrefix,
    concurrency: 1,
    // note: as the imports worker (worker.ts): a worker that dies holds the job until its lock
    // expires; another worker's stalled check then puts it back to wait, and it goes on from the
    // first unwritten row. Past maxStalledCount it fails, and the fallback retries it.
    lockDuration: config.workerLockDurationMs,
    stalledInterval: Math.max(1_000, Math.floor(config.workerLockDurationMs / 2)),
    maxStalledCount: 2,
  });
  // note: without an error listener a Redis hiccup would be an unhandled 'error' event.
  worker.on('error', (error) => log.error({ err: error }, 'file import worker error'));
  worker.on('failed', (job, error) => log.warn({ jobId: job?.id, err: error, attemptsMade: job?.attemptsMade }, 'file import job failed'));
  const fallback = startFileImportFallback(clients.sql, clients.queue, log, settings.pollMs ?? FILE_IMPORTS_POLL_MS);

  return {
    worker,
    async stop() {
      stopping = true;
      await fallback.stop();
      await closeQueueWorker(worker);
    },
  };
}
