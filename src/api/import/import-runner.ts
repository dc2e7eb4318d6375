import { randomUUID } from 'node:crypto';
import { Job } from 'bullmq';
import type { AnyNewImport, ImportQueue } from '../../shared/import/import-queue.js';
import { actionOf, AnyImportResultSchema, type AnyImportJobData, type AnyImportResult } from '../../shared/import/row-removal-job.js';
import type { ImportRowsStore } from '../../shared/import/rows-store.js';
import { markImportStep } from '../../shared/import/import-steps.js';
import type { Sql } from '../../shared/infra/db.js';
import type { Logger } from '../../shared/infra/logger.js';
import { recordImportNotWritten, recordImportUnsettled } from '../../shared/repositories/import-records.js';
import { ImportNotWrittenError, ImportOutcomeUnknownError } from './import-errors.js';
import type { ImportReplies } from './import-reply-listener.js';
import { JobWatch, type JobOutcome } from './job-watch.js';

/**
 * How often a waiting request polls its job. note: the poll is what a lost reply costs (one
 * published while this process was reconnecting to Redis), and how a request learns that a worker
 * has taken its job (the pickup timeout withdraws a job no worker took): every half second, a
 * Redis round trip or two per request waiting.
 */
const POLL_INTERVAL_MS = 500;

/**
 * How long a job answered 504 is still watched, so that its account's in-flight slot is held
 * until it ends (docs/access.md#in-flight-cap). note: a bound, not an expectation: a job ends
 * within its attempts, or is found gone, long before this.
 */
export const WATCH_AFTER_TIMEOUT_MS = 10 * 60_000;

/** How long a 504 waits at most for the import to be recorded unsettled. */
const RECORD_UNSETTLED_MS = 2_000;

/**
 * ioredis refuses a command it never sent (not connected, and no offline queue) with this
 * text; a command that was sent and then lost its answer (connection closed, timeout) fails
 * otherwise, and may have run.
 */
const NEVER_SENT = 'enableOfflineQueue options is false';

export interface ImportTimeouts {
  /** how long a worker may take to pick the job up before the API withdraws it */
  pickupMs: number;
  /** how long the API waits for a picked-up job to finish before its outcome is unknown */
  finishMs: number;
  /** how long a job whose outcome was answered unknown is still watched (WATCH_AFTER_TIMEOUT_MS) */
  watchAfterTimeoutMs?: number;
  /** how often a waiter polls its job (POLL_INTERVAL_MS); tests lengthen it to see the other paths alone */
  pollIntervalMs?: number;
}

function timeout(ms: number): { promise: Promise<'timeout'>; cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  const promise = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms);
  });
  return { promise, cancel: () => clearTimeout(timer) };
}

/**
 * Enqueues an import and waits for its outcome. The worker publishes the outcome to every API
 * process (`replies`: import-reply.ts), and each waiter also polls its job, so a lost reply
 * delays an answer by at most POLL_INTERVAL_MS instead of hanging it. The first news wins
 * (JobWatch). note: not the queue's own events (QueueEvents): reading them cost this process some
 * 7 % of its CPU per import and Redis 12 % (bench/README.md), for news the replies already bring.
 * Every exit is one the partner can act on: the result (rows in exactly once),
 * ImportNotWrittenError (safe to retry: thrown only once the import's record proves that it wrote
 * nothing and never will), or ImportOutcomeUnknownError (still running: resolved by retrying with
 * the Idempotency-Key).
 *
 * note: its log lines name the import `jobId`, as the worker's do (docs/operators.md#logs): a field
 * operators' searches and alerts read, kept when the code's name became importId.
 */
export class ImportRunner {
  /** one watch per job, shared by the requests of this process that wait on it */
  private readonly watches = new Map<string, { watch: JobWatch; waiters: number }>();
  /** resolves when the process stops: the jobs answered 504 are watched no longer */
  private readonly closed: Promise<void>;
  private markClosed!: () => void;

  /** Imports this process waits on now (each once, however many of its requests wait on it). */
  get inFlight(): number {
    return this.watches.size;
  }

  constructor(
    private readonly sql: Sql,
    private readonly queue: ImportQueue,
    private readonly rowsStore: ImportRowsStore,
    private readonly timeouts: ImportTimeouts,
    private readonly log: Logger,
    replies?: ImportReplies,
  ) {
    this.closed = new Promise((resolve) => (this.markClosed = resolve));
    // note: a reply is final news: a result sent only once the import committed, a failure only
    // once the job failed for good (the worker's side). Replies of jobs this process does not
    // wait on are ignored. A reply's `jobId` is the import's id (import-reply.ts).
    replies?.onReply((reply) =>
      this.watches.get(reply.jobId)?.watch.finish(reply.state === 'completed' ? { state: 'completed', result: reply.result } : { state: 'failed', reason: reply.reason }),
    );
  }

  /**
   * Runs the import under `importId` (a fresh one by default), its id, and returns its result. Its
   * errors carry the id too, but for a dry run, which has none. note: an ImportOutcomeUnknownError
   * carries `settled`, when the job ended (or stopped being watched): the request's in-flight
   * slot is held until then.
   */
  async run(input: AnyNewImport, importId: string = randomUUID()): Promise<AnyImportResult> {
    const watch = this.watch(importId);
    const answeredId = input.dryRun === true ? undefined : importId;
    let settled: Promise<void> | undefined;
    try {
      return await this.outcomeOf(input, importId, watch);
    } catch (error) {
      if (error instanceof ImportOutcomeUnknownError) {
        settled = this.settling(watch);
        if (answeredId !== undefined) await this.recordUnsettled(input, answeredId);
        throw new ImportOutcomeUnknownError(input.requestId, answeredId, settled);
      }
      if (error instanceof ImportNotWrittenError) throw new ImportNotWrittenError(error.reason, answeredId);
      throw error;
    } finally {
      if (settled === undefined) this.unwatch(importId);
      else void settled.then(() => this.unwatch(importId));
    }
  }

  private async outcomeOf(input: AnyNewImport, importId: string, watch: JobWatch): Promise<AnyImportResult> {
    try {
      await this.enqueue(input, importId, watch);
      return await this.awaitOutcome(input, importId, watch);
    } catch (error) {
      // note: a dry run rolls back whatever happens, so it is never recorded, failed or not.
      if (error instanceof ImportNotWrittenError && input.dryRun !== true) return this.proveNotWritten(input, importId, error);
      throw error;
    }
  }

  /**
   * A job that failed, was withdrawn, lost or never queued is not proof that nothing was
   * written: a job can fail after its commit (its acknowledgement lost, its worker dying twice
   * before it), and a job the queue lost may still be in a worker's hands. The import's record
   * is the proof: recorded `failed` here, the job can never write; found `completed`, it did,
   * and its result is the answer. When the record cannot be written, nothing is proven.
   */
  private async proveNotWritten(input: AnyNewImport, importId: string, notWritten: ImportNotWrittenError): Promise<AnyImportResult> {
    const { accountId, kind, requestId, total, errors, createdAt } = input;
    let record;
    try {
      record = await recordImportNotWritten(this.sql, { importId, accountId, kind, requestId, total, errors, createdAt, action: actionOf(input) }, { withRows: input.returnRows === true });
    } catch (error) {
      this.log.error({ err: error, jobId: importId, requestId, reason: notWritten.reason }, 'could not record that an import wrote nothing; its outcome is unknown');
      throw new ImportOutcomeUnknownError(requestId);
    }
    if (record.state === 'failed') throw notWritten;
    if (record.state === 'running') throw new Error(`import ${importId} could not be fenced: its record is still running`);
    this.log.warn({ jobId: importId, requestId, reason: notWritten.reason }, 'an import the queue reported unwritten had committed; answering its recorded result');
    return record.result;
  }

  /**
   * So that an import answered 504 can be watched (docs/imports.md). note: best effort, and at
   * most RECORD_UNSETTLED_MS: the answer is not held up by a database that does not answer.
   */
  private async recordUnsettled(input: AnyNewImport, importId: string): Promise<void> {
    const { accountId, kind, requestId, total, errors, createdAt } = input;
    const limit = timeout(RECORD_UNSETTLED_MS);
    const recorded = recordImportUnsettled(this.sql, { importId, accountId, kind, requestId, total, errors, createdAt, action: actionOf(input) }).catch((err: unknown) =>
      this.log.warn({ err, jobId: importId, requestId }, 'could not record an import answered 504 as unsettled; it reads 404 until it ends'),
    );
    await Promise.race([recorded, limit.promise]);
    limit.cancel();
  }

  /** Resolves when the watched job ends, is found gone, WATCH_AFTER_TIMEOUT_MS passes, or the runner closes. */
  private settling(watch: JobWatch): Promise<void> {
    // note: an add whose outcome is unknown may have reached Redis: missing from now on means gone.
    watch.markAdded();
    const limit = timeout(this.timeouts.watchAfterTimeoutMs ?? WATCH_AFTER_TIMEOUT_MS);
    return Promise.race([watch.finished, limit.promise, this.closed]).then(() => limit.cancel());
  }

  /**
   * Stops watching the jobs answered 504, so that their timers do not hold the process up once
   * its requests are answered. note: their slots' leases end with the process.
   */
  close(): void {
    this.markClosed();
  }

  /**
   * After the job was added. note: a Redis error here (a failover while withdrawing the job,
   * say) leaves the job in an unknown state, so its outcome is unknown, never "nothing written".
   */
  private async awaitOutcome(input: AnyNewImport, importId: string, watch: JobWatch): Promise<AnyImportResult> {
    try {
      markImportStep(input.requestId, 'api.queued');
      if (!(await this.waitForPickup(watch))) {
        // note: remove() refuses a job a worker has locked, so a job that is withdrawn can
        // never run later, and one that was just taken is waited for as usual. A job that is
        // gone was withdrawn by another request waiting on it.
        const removed = (await this.queue.remove(importId)) === 1;
        if (removed) await this.forgetRows(importId);
        if (removed || (await Job.fromId(this.queue, importId)) === undefined) {
          throw new ImportNotWrittenError('workers-unavailable');
        }
      }
      const limit = timeout(this.timeouts.finishMs);
      const outcome = await Promise.race([watch.finished, limit.promise]);
      markImportStep(input.requestId, 'api.finished');
      limit.cancel();
      if (outcome === 'timeout') throw new ImportOutcomeUnknownError(input.requestId);
      return this.resultOf(importId, outcome);
    } catch (error) {
      if (error instanceof ImportNotWrittenError || error instanceof ImportOutcomeUnknownError) throw error;
      this.log.error({ err: error, jobId: importId, requestId: input.requestId }, 'lost track of an import job');
      throw new ImportOutcomeUnknownError(input.requestId);
    }
  }

  /**
   * Waits for the job an earlier request started under `importId` (an Idempotency-Key repeat),
   * or starts it when it is not queued yet or failed: nothing had been written then, and the
   * worker's record by job id keeps a job that runs twice from writing twice.
   */
  async rejoin(input: AnyNewImport, importId: string): Promise<AnyImportResult> {
    const existing = await Job.fromId<AnyImportJobData, AnyImportResult>(this.queue, importId);
    if (existing && (await existing.isFailed())) await existing.remove();
    return this.run(input, importId);
  }

  private watch(importId: string): JobWatch {
    const shared = this.watches.get(importId);
    if (shared) {
      shared.waiters += 1;
      return shared.watch;
    }
    const watch: JobWatch = new JobWatch((): Promise<void> => this.poll(importId, watch), this.timeouts.pollIntervalMs ?? POLL_INTERVAL_MS);
    this.watches.set(importId, { watch, waiters: 1 });
    return watch;
  }

  private unwatch(importId: string): void {
    const shared = this.watches.get(importId);
    if (!shared) return;
    shared.waiters -= 1;
    if (shared.waiters === 0) {
      shared.watch.stop();
      this.watches.delete(importId);
    }
  }

  /**
   * Stores the rows, then adds the job, so a worker never takes a job whose rows are not there
   * yet. note: on one connection both go on the queue's own client, which carries commands in
   * order, so the add need not wait a round trip for the store; on a cluster it waits (see
   * ImportRowsStore.keepsSendOrder). Re-storing the rows of a job that exists (a repeat) is
   * harmless: they are the same rows.
   */
  private async enqueue({ rows, ...data }: AnyNewImport, importId: string, watch: JobWatch): Promise<void> {
    const stored = this.rowsStore.put(importId, rows.take());
    let added: Promise<unknown> | undefined;
    try {
      if (!this.rowsStore.keepsSendOrder) await stored;
      added = this.queue.add(data.kind, data, { jobId: importId });
      await Promise.all([stored, added]);
      watch.markAdded();
    } catch (error) {
      this.log.error({ err: error, requestId: data.requestId }, 'could not enqueue import');
      const addError = added === undefined ? undefined : await added.then(() => undefined, (e: unknown) => e);
      const jobNeverSent = added === undefined || (addError instanceof Error && addError.message.includes(NEVER_SENT));
      if (jobNeverSent) throw new ImportNotWrittenError('not-enqueued');
      throw new ImportOutcomeUnknownError(data.requestId);
    }
  }

  /** A withdrawn job never runs; its rows would otherwise wait out their expiry. */
  private async forgetRows(importId: string): Promise<void> {
    try {
      await this.rowsStore.delete(importId);
    } catch (error) {
      this.log.warn({ err: error, jobId: importId }, 'could not delete the rows of a withdrawn import; they expire');
    }
  }

  private async waitForPickup(watch: JobWatch): Promise<boolean> {
    const limit = timeout(this.timeouts.pickupMs);
    const picked = await Promise.race([watch.pickedUp.then(() => true), limit.promise]);
    limit.cancel();
    return picked === true;
  }

  private resultOf(importId: string, outcome: JobOutcome): AnyImportResult {
    if (outcome.state === 'failed') {
      // note: proveNotWritten checks the record before the partner is told that nothing was written.
      this.log.error({ jobId: importId, reason: outcome.reason }, 'import job failed');
      throw new ImportNotWrittenError('failed');
    }
    if (outcome.state === 'gone') {
      this.log.error({ jobId: importId }, 'import job is gone from the queue');
      throw new ImportNotWrittenError('lost');
    }
    const parsed = AnyImportResultSchema.safeParse(outcome.result);
    if (!parsed.success) throw new Error(`import job ${importId} returned an unexpected result`);
    return parsed.data;
  }

  private async poll(importId: string, watch: JobWatch): Promise<void> {
    try {
      // note: the state first, then the job: a job read before its state would be a snapshot
      // taken before it finished (no result) if it completed in between. A finished job's result
      // is written in the same step that finishes it, so a read after the state has it.
      const state = await this.queue.getJobState(importId);
      if (state === 'unknown') {
        watch.markMissing();
        return;
      }
      watch.markPresent();
      if (state === 'active') {
        watch.markPickedUp();
        return;
      }
      const job = await Job.fromId<AnyImportJobData, AnyImportResult>(this.queue, importId);
      if (!job) return;
      if (state === 'completed') watch.finish({ state: 'completed', result: job.returnvalue });
      else if (state === 'failed') watch.finish({ state: 'failed', reason: job.failedReason });
      else if (job.attemptsMade > 0) watch.markPickedUp();
    } catch (error) {
      this.log.warn({ err: error, jobId: importId }, 'could not poll import job');
    }
  }
}
