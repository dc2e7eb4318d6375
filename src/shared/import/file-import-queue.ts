import { Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import { z } from 'zod';
import type { Config } from '../infra/config.js';
import type { ImportKind } from './import-kinds.js';

export const FILE_IMPORT_QUEUE_NAME = 'file-imports';

/**
 * A file import's job: the import to write, nothing else (the file is in PostgreSQL); with
 * `helper`, one of the jobs that let other workers write chunks of it beside its own job
 * (addFileImportHelpers). note: the worker parses it with this schema, as it does an import
 * job's: the queue is a trust boundary. A worker before 0.11.0 refuses a helper's job as
 * malformed (its id is not the import's), which writes nothing.
 */
export const FileImportJobDataSchema = z.object({ importId: z.uuid(), helper: z.number().int().min(1).max(16).optional() });
export type FileImportJobData = z.infer<typeof FileImportJobDataSchema>;

/** What a file import's job returns: how its import ended, as writeFileChunk told it; a helper's job, that it stopped helping. */
export interface FileImportJobResult {
  state: 'completed' | 'ended' | 'helped';
}

/** The id of an import's job (the import's own), or of its helper's job `helper`. */
export function fileImportJobId(importId: string, helper?: number): string {
  return helper === undefined ? importId : `${importId}-helper-${helper}`;
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

/**
 * A helper's job is tried once and forgotten when it ends: the import's own job goes on whatever
 * happens to it, and a later run of that job may add it again.
 */
const FILE_IMPORT_HELPER_JOB_OPTIONS: JobsOptions = { attempts: 1, removeOnComplete: true, removeOnFail: true };

/**
 * Adds `helpers` jobs that write chunks of a file import beside its own job, so that every worker
 * free to take one writes the file too (FILE_IMPORT_HELPERS): a file is then written by
 * PostgreSQL as fast as the workers' connections can feed it, not by one process. A no-op for
 * each helper whose job is still there. note: chunks never collide: each row of a file is staged
 * once, its `external_id` claimed by one row, and each chunk is taken by one transaction.
 */
export async function addFileImportHelpers(queue: FileImportQueue, importId: string, kind: string, helpers: number): Promise<void> {
  if (helpers === 0) return;
  await queue.addBulk(
    Array.from({ length: helpers }, (_, i) => ({
      name: kind,
      data: { importId, helper: i + 1 },
      opts: { ...FILE_IMPORT_HELPER_JOB_OPTIONS, jobId: fileImportJobId(importId, i + 1) },
    })),
  );
}

/** Adds the job of a file import, listed under its kind; a no-op while that import's job exists. */
export async function addFileImportJob(queue: FileImportQueue, importId: string, kind: ImportKind): Promise<void> {
  await queue.add(kind, { importId }, { jobId: importId });
}
