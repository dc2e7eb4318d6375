import { Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import { z } from 'zod';
import type { Config } from '../infra/config.js';
import type { ImportKind } from './import-kinds.js';

export const FILE_IMPORT_QUEUE_NAME = 'file-imports';

/**
 * A file import's job: the import to write, nothing else (the file is in PostgreSQL). note: the
 * worker parses it with this schema, as it does an import job's: the queue is a trust boundary.
 */
export const FileImportJobDataSchema = z.object({ importId: z.uuid() });
export type FileImportJobData = z.infer<typeof FileImportJobDataSchema>;

/** What a file import's job returns: how its import ended, as writeFileChunk told it. */
export interface FileImportJobResult {
  state: 'completed' | 'ended';
}

/**
 * - One job per import, its id the import's id: adding it again (the API, then the workers'
 *   fallback) is a no-op while the job exists.
 * - attempts/backoff: a dropped database connection is retried here; safe because every chunk is
 *   one transaction under the import's record lock (writeFileChunk). Once the attempts are spent
 *   the workers' fallback retries the job (file-import-fallback.ts), as it does a job that
 *   finished while its import is still queued or running.
 * - Finished jobs are kept a day (at most 1,000 of each), so Bull Board shows every recent file
 *   import with its chunks. note: not removed at once: the fallback, not a fresh add, is what
 *   revives a finished job whose import is unfinished, so keeping them costs no stuck import.
 */
export const FILE_IMPORT_JOB_OPTIONS: JobsOptions = {
  attempts: 3,
  backoff: { type: 'exponential', delay: 1_000 },
  removeOnComplete: { age: 24 * 3_600, count: 1_000 },
  removeOnFail: { age: 24 * 3_600, count: 1_000 },
};

export type FileImportQueue = Queue<FileImportJobData, FileImportJobResult>;

export function createFileImportQueue(config: Pick<Config, 'redisPrefix'>, connection: ConnectionOptions): FileImportQueue {
  return new Queue<FileImportJobData, FileImportJobResult>(FILE_IMPORT_QUEUE_NAME, {
    connection,
    prefix: config.redisPrefix,
    defaultJobOptions: FILE_IMPORT_JOB_OPTIONS,
  });
}

/** Adds the job of a file import, listed under its kind; a no-op while that import's job exists. */
export async function addFileImportJob(queue: FileImportQueue, importId: string, kind: ImportKind): Promise<void> {
  await queue.add(kind, { importId }, { jobId: importId });
}
