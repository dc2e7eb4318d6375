import { randomUUID } from 'node:crypto';
import { Job, type Queue, type QueueEvents } from 'bullmq';
import { ApiError } from '../shared/api-error.js';
import { BulkResultSchema, type BulkResult, type ImportJobData } from '../shared/import-queue.js';
import type { Logger } from '../shared/logger.js';

type Outcome = { state: 'completed'; result: unknown } | { state: 'failed'; reason: string } | { state: 'timeout' };

// note: QueueEvents delivery is best effort; polling the job bounds the cost of a lost event.
const POLL_INTERVAL_MS = 1_000;

/**
 * Enqueues an import and waits for its outcome. One QueueEvents subscription serves every
 * request in flight; each waiter also polls its job, so a lost event delays a reply by at most
 * POLL_INTERVAL_MS instead of hanging it.
 */
export class ImportRunner {
  private readonly waiting = new Map<string, (outcome: Outcome) => void>();

  constructor(
    private readonly queue: Queue<ImportJobData, BulkResult>,
    events: QueueEvents,
    private readonly timeoutMs: number,
    private readonly log: Logger,
  ) {
    events.on('completed', ({ jobId, returnvalue }) => this.settle(jobId, { state: 'completed', result: returnvalue }));
    events.on('failed', ({ jobId, failedReason }) => this.settle(jobId, { state: 'failed', reason: failedReason }));
  }

  async run(data: ImportJobData): Promise<BulkResult> {
    const jobId = randomUUID();
    const outcome = this.waitFor(jobId);
    try {
      await this.queue.add(data.kind, data, { jobId });
    } catch (error) {
      this.settle(jobId, { state: 'timeout' });
      this.log.error({ err: error, requestId: data.requestId }, 'could not enqueue import');
      throw new ApiError(503, { error: 'Service temporarily unavailable', retry_after_sec: 5 }, { 'retry-after': '5' });
    }
    const settled = await outcome;
    if (settled.state === 'completed') {
      const parsed = BulkResultSchema.safeParse(settled.result);
      if (parsed.success) return parsed.data;
      throw new Error(`import job ${jobId} returned an unexpected result`);
    }
    if (settled.state === 'failed') {
      throw new Error(`import job ${jobId} failed: ${settled.reason}`);
    }
    throw new ApiError(504, { error: 'Import is still running; check before retrying', request_id: data.requestId });
  }

  private waitFor(jobId: string): Promise<Outcome> {
    return new Promise<Outcome>((resolve) => {
      const poll = setInterval(() => void this.poll(jobId), POLL_INTERVAL_MS);
      const timeout = setTimeout(() => this.settle(jobId, { state: 'timeout' }), this.timeoutMs);
      this.waiting.set(jobId, (outcome) => {
        clearInterval(poll);
        clearTimeout(timeout);
        resolve(outcome);
      });
    });
  }

  private async poll(jobId: string): Promise<void> {
    try {
      const job = await Job.fromId<ImportJobData, BulkResult>(this.queue, jobId);
      if (!job) return;
      const state = await job.getState();
      if (state === 'completed') this.settle(jobId, { state: 'completed', result: job.returnvalue });
      else if (state === 'failed') this.settle(jobId, { state: 'failed', reason: job.failedReason });
    } catch (error) {
      this.log.warn({ err: error, jobId }, 'could not poll import job');
    }
  }

  private settle(jobId: string, outcome: Outcome): void {
    const resolve = this.waiting.get(jobId);
    if (!resolve) return;
    this.waiting.delete(jobId);
    resolve(outcome);
  }

  /** Jobs this process is waiting on: a graceful shutdown lets them finish first. */
  get inFlight(): number {
    return this.waiting.size;
  }
}
