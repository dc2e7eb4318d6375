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
  rows: RowsHandOver;
}

/**
 * The valid rows of an import as one JSON array (encodeImportRows), exactly what the insert
 * statement reads, handed over once to the queue. note: a string, not objects: the worker
 * passes it to PostgreSQL as it is. Handed over, not held: V8 keeps every variable of an async
 * function alive while it awaits, so a request waiting on its import would otherwise keep up
 * to ~2 MB of rows until the import ends.
 */
export class RowsHandOver {
  private json: string | Buffer | undefined;

  /** `json` as text or as its UTF-8 bytes */
  constructor(json: string | Buffer) {
    this.json = json;
  }

  take(): string | Buffer {
    const json = this.json;
    if (json === undefined) throw new Error('the rows of this import were already handed over');
    this.json = undefined;
    return json;
  }
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
