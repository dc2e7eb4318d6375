import { Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import type { Config } from '../infra/config.js';
import type { ImportJobData } from './import-job.js';
import type { AnyImportJobData, AnyImportResult, RowRemovalJobData } from './row-removal-job.js';
import type { RowsHandOver } from './rows-hand-over.js';

export const IMPORT_QUEUE_NAME = 'imports';

/** A job to enqueue, with its rows. */
export interface NewImport extends ImportJobData {
  rows: RowsHandOver;
}

/** An archive or delete job to enqueue, with its entries (encodeRemovalEntries) as `rows`. */
export interface NewRowRemoval extends RowRemovalJobData {
  rows: RowsHandOver;
}

/** Any job of the import queue, as the API enqueues it. */
export type AnyNewImport = NewImport | NewRowRemoval;

/** The import queue: upserts, archives and deletes (row-removal-job.ts). */
export type ImportQueue = Queue<AnyImportJobData, AnyImportResult>;

/**
 * - attempts/backoff: a failure such as a dropped database connection is retried; safe because
 *   writeImport is idempotent by job id, and bounded so a request still ends well within
 *   IMPORT_TIMEOUT_MS.
 * - Finished jobs are trimmed by age and count so Redis does not grow without bound. note: not
 *   `removeOnComplete: true`, which races the API reading the result of a fast job.
 */
export const IMPORT_JOB_OPTIONS: JobsOptions = {
  attempts: 3,
  backoff: { type: 'exponential', delay: 500 },
  removeOnComplete: { age: 3_600, count: 1_000 },
  removeOnFail: { age: 24 * 3_600, count: 1_000 },
};

export function createImportQueue(config: Pick<Config, 'redisPrefix'>, connection: ConnectionOptions): ImportQueue {
  return new Queue<AnyImportJobData, AnyImportResult>(IMPORT_QUEUE_NAME, {
    connection,
    prefix: config.redisPrefix,
    defaultJobOptions: IMPORT_JOB_OPTIONS,
  });
}
