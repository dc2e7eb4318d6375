import { Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import { z } from 'zod';
import type { Config } from './config.js';
import type { BulkKind } from './bulk-kinds.js';
import type { RowError } from './rows/validate-rows.js';

export const IMPORT_QUEUE_NAME = 'imports';

/**
 * What the API hands the worker: the rows that passed validation, already normalised, plus the
 * per-row errors so the worker can record the whole result. Never a secret.
 */
export interface ImportJobData {
  kind: BulkKind;
  accountId: string;
  requestId: string;
  /** rows sent in the request, valid or not */
  total: number;
  errors: RowError[];
  /** how many valid rows the job writes; the rows themselves wait in ImportRowsStore */
  rowCount: number;
}

/** A job to enqueue, with its rows. */
export interface NewImport extends ImportJobData {
  /**
   * The valid rows as one JSON array (encodeImportRows), exactly what the insert statement
   * reads. note: a string, not objects: the worker hands it to PostgreSQL as it is, instead of
   * parsing ~200 KB into objects and serialising them again for every job.
   */
  rows: string;
}

export const BulkResultSchema = z.object({
  inserted: z.number().int().nonnegative(),
  skipped: z.number().int().nonnegative(),
  errors: z.array(z.object({ index: z.number().int().nonnegative(), reason: z.string() })),
});
export type BulkResult = z.infer<typeof BulkResultSchema>;

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

export function createImportQueue(config: Pick<Config, 'redisPrefix'>, connection: ConnectionOptions): Queue<ImportJobData, BulkResult> {
  return new Queue<ImportJobData, BulkResult>(IMPORT_QUEUE_NAME, {
    connection,
    prefix: config.redisPrefix,
    defaultJobOptions: IMPORT_JOB_OPTIONS,
  });
}
