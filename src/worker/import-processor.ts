import { UnrecoverableError, type Job } from 'bullmq';
import postgres from 'postgres';
import type { Sql } from '../shared/infra/db.js';
import { ImportJobDataSchema, type ImportJob } from '../shared/import/import-job.js';
import {
  isRowRemovalJobData,
  RowRemovalJobDataSchema,
  type AnyImportJobData,
  type AnyImportResult,
  type RowRemovalJob,
} from '../shared/import/row-removal-job.js';
import type { ImportRowsStore } from '../shared/import/rows-store.js';
import type { ImportReplySender } from '../shared/import/import-reply.js';
import type { Logger } from '../shared/infra/logger.js';
import { markImportStep } from '../shared/import/import-steps.js';
import { AccountGoneError, ImportAbandonedError, ImportRowCountError, ImportRowsGoneError, ImportRowsRefusedError } from './write-errors.js';
import { writeImport, type ImportRows } from './write-import.js';
import { writeRowRemoval } from './write-row-removal.js';
import type { FaultHooks } from './fault-injection.js';
import { failedForGood } from './final-failure.js';
import { settleWithin } from './attempt-deadline.js';

/**
 * SQLSTATE classes of errors the same rows would meet again: cardinality violations (one
 * external id twice in a job), data exceptions (bad JSON, a value of the wrong type) and
 * integrity violations (a table constraint). Retrying cannot help.
 */
const PERMANENT_SQLSTATE_CLASSES = ['21', '22', '23'];

function isPermanent(error: unknown): boolean {
  if (error instanceof AccountGoneError || error instanceof ImportRowCountError || error instanceof ImportRowsRefusedError || error instanceof ImportAbandonedError) return true;
  return error instanceof postgres.PostgresError && PERMANENT_SQLSTATE_CLASSES.includes(error.code.slice(0, 2));
}

/**
 * Tells the waiting API that a job failed, once it failed for good, as the queue's own 'failed'
 * event does. note: never after an attempt that is retried: the retry may still write, and the
 * API, told "failed", would fence the import out. Called from the worker's 'failed' event, after
 * BullMQ recorded the failure.
 */
export function replyIfFailedForGood(job: Job<AnyImportJobData, AnyImportResult> | undefined, replies: ImportReplySender): void {
  if (job?.id === undefined || !failedForGood(job)) return;
  replies.send({ jobId: job.id, state: 'failed', reason: job.failedReason });
}

/**
 * A job's data checked with its action's schema (an archive or a delete has its own:
 * row-removal-job.ts), and how many rows or entries it announces beside its errors; undefined
 * when it is malformed.
 */
function checkJob(raw: unknown): { data: ImportJob | RowRemovalJob; announced: number } | undefined {
  if (isRowRemovalJobData(raw)) {
    const removal = RowRemovalJobDataSchema.safeParse(raw);
    return removal.success ? { data: removal.data, announced: removal.data.entryCount } : undefined;
  }
  const upsert = ImportJobDataSchema.safeParse(raw);
  return upsert.success ? { data: upsert.data, announced: upsert.data.rowCount } : undefined;
}

/**
 * Writes one import job: an upsert (writeImport), or an archive or delete (writeRowRemoval). note: the queue is a trust boundary (anything with Redis access can
 * add a job): the envelope is checked here, and the rows are checked by the table constraints
 * as they are inserted, so a forged or corrupted job fails and writes nothing.
 */
export interface ImportProcessorOptions {
  faults?: FaultHooks;
  /** told of each job that ends, for the waiting API */
  replies?: ImportReplySender;
  /**
   * how long one attempt's write may take before it is given up and retried (settleWithin);
   * the worker passes IMPORT_TIMEOUT_MS, the API's own wait: an attempt still running then has
   * lost its partner's answer anyway.
   */
  attemptTimeoutMs?: number;
}

const DEFAULT_ATTEMPT_TIMEOUT_MS = 60_000;

/** A fetch of a job's rows, settled by the write that awaits it, or moot once that write has failed. */
function fetching<T>(rows: Promise<T>): Promise<T> {
  rows.catch(() => undefined);
  return rows;
}

export function createImportProcessor(sql: Sql, rowsStore: ImportRowsStore, log: Logger, options: ImportProcessorOptions = {}) {
  const { faults = {}, replies, attemptTimeoutMs = DEFAULT_ATTEMPT_TIMEOUT_MS } = options;
  const forgetRows = (importId: string, jobLog: Logger) =>
    rowsStore.delete(importId).catch((err: unknown) => jobLog.warn({ err }, 'could not delete the rows of a finished import; they expire'));
  return async function processImport(job: Job<AnyImportJobData, AnyImportResult>): Promise<AnyImportResult> {
    // note: the worker's lines name the job `jobId` (docs/operators.md#logs, and the alerts in
    // ops/prometheus/alerts.yml): a log field operators read, so it keeps its name.
    const jobLog = log.child({ jobId: job.id, requestId: job.data?.requestId });
    const checked = checkJob(job.data);
    if (checked === undefined || job.id === undefined) {
      throw new UnrecoverableError('malformed import job payload');
    }
    const { data, announced } = checked;
    if (announced + data.errors.length !== data.total) {
      throw new UnrecoverableError('import job counts do not add up');
    }
    // note: the API adds the job under the import's id (BullMQ's own `jobId` option).
    const importId = job.id;
    const started = performance.now();
    markImportStep(data.requestId, 'worker.started');
    // note: fetched while the transaction begins and records the import; writeImport awaits the
    // rows only then. A job whose rows are gone was either written by an earlier run that died
    // before acknowledging it (its recorded result is returned without them) or withdrawn or
    // expired (ImportRowsGoneError, and nothing is written).
    let result: AnyImportResult;
    try {
      const write =
        'action' in data
          ? writeRowRemoval(sql, { ...data, entriesJson: fetching(rowsStore.get(importId)), importId }, faults)
          : writeImport(sql, { ...data, rows: fetching<ImportRows | null>(data.rowsFormat === 'copy' ? rowsStore.getBytes(importId) : rowsStore.get(importId)), importId }, faults);
      result = await settleWithin(write, attemptTimeoutMs, `the write of import ${importId}`);
    } catch (error) {
      if (error instanceof ImportRowsGoneError) throw new UnrecoverableError('import job rows are gone; nothing was written');
      // A retry cannot bring a deleted account back, make bad rows good or write an import that
      // was answered "nothing was written"; anything else (a dropped connection) may pass.
      if (isPermanent(error)) {
        await forgetRows(importId, jobLog);
        throw new UnrecoverableError(error instanceof Error ? error.message : String(error));
      }
      throw error;
    }
    markImportStep(data.requestId, 'worker.committed');
    faults.afterCommit?.();
    // note: not awaited; the job's result does not depend on it, and a key left behind expires.
    void forgetRows(importId, jobLog);
    jobLog.info(
      {
        kind: data.kind,
        action: 'action' in data ? data.action : 'upsert',
        accountId: data.accountId,
        inserted: result.inserted,
        updated: result.updated,
        unchanged: result.unchanged,
        archived: result.archived,
        deleted: result.deleted,
        skipped: result.skipped,
        ms: Math.round(performance.now() - started),
      },
      data.dryRun ? 'dry run checked and rolled back' : 'import written',
    );
    // note: the answer goes to the waiting API once the transaction committed, before BullMQ
    // marks the job completed (one round trip and a script later): the commit is what the 201
    // promises, and a job that runs again returns this same recorded result. After the fault
    // hook, so a worker that dies after its commit has told no one, as the fault tests assume,
    // and after the log line, so the answer never comes before the worker says what it wrote.
    replies?.send({ jobId: importId, state: 'completed', result });
    return result;
  };
}
