import type { Job } from 'bullmq';
import type { Sql } from '../shared/infra/db.js';
import type { AnyImportJobData, AnyImportResult } from '../shared/import/row-removal-job.js';
import type { Logger } from '../shared/infra/logger.js';
import { fenceUnsettledImport } from '../shared/repositories/import-records.js';

/**
 * Whether this 'failed' is the job's last: no retry is left. note: BullMQ (6.x) emits the
 * worker's 'failed' after every failed attempt, retried ones included, in the worker that ran it
 * (Worker.handleFailed, after Job.moveToFailed). moveToFailed retries the job (to `delayed`)
 * unless the error is an UnrecoverableError or no attempt is left (attemptsMade + 1 >= attempts);
 * only when it moves the job to the failed set for good does it set `finishedOn`. A job stalled
 * more than maxStalledCount times is not failed by the stalled check itself: it goes back to
 * `wait` with a deferred failure (moveStalledJobsToWait sets `defa`), and the next worker to take
 * it fails it at once with an UnrecoverableError, through the same path. A failure that cannot be
 * recorded in Redis (the job's lock was lost to another worker) emits no 'failed' here. So
 * `finishedOn` set here means: failed for good, once per job. (QueueEvents' 'failed' fires once
 * per final failure too, but to every listener: every worker would fence.)
 */
export function failedForGood(job: Job<AnyImportJobData, AnyImportResult>): boolean {
  return typeof job.finishedOn === 'number';
}

/**
 * Records the import of a job that failed for good as `failed` when it was answered 504 and is
 * unsettled (fenceUnsettledImport), so that it reads `failed` rather than `running` until the
 * sweep. note: a job that failed while the API waited on it is fenced by the API; one that
 * nothing answered for gets no record (the queue is a trust boundary). A dry run is never
 * recorded. Never throws.
 */
export async function recordFailedForGood(sql: Sql, job: Job<AnyImportJobData, AnyImportResult>, log: Logger): Promise<void> {
  if (job.id === undefined || job.data?.dryRun === true) return;
  const jobLog = log.child({ jobId: job.id, requestId: job.data?.requestId });
  try {
    if (await fenceUnsettledImport(sql, job.id)) jobLog.info('import job failed for good; its import, answered 504, is recorded failed');
  } catch (err) {
    jobLog.warn({ err }, 'could not record the import of a job that failed for good');
  }
}
