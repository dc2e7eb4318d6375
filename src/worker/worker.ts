import { Worker } from 'bullmq';
import type { Config } from '../shared/infra/config.js';
import { createSql } from '../shared/infra/db.js';
import { IMPORT_QUEUE_NAME } from '../shared/import/import-queue.js';
import { createFileImportQueue } from '../shared/import/file-import-queue.js';
import type { AnyImportJobData, AnyImportResult } from '../shared/import/row-removal-job.js';
import { ImportRowsStore } from '../shared/import/rows-store.js';
import { ImportReplySender } from '../shared/import/import-reply.js';
import type { Logger } from '../shared/infra/logger.js';
import { createRedis } from '../shared/infra/redis.js';
import { deleteExpiredIdempotencyKeys } from '../shared/repositories/idempotency-keys.js';
import { failedForGood, recordFailedForGood } from './final-failure.js';
import { faultHooks } from './fault-injection.js';
import { createImportProcessor, replyIfFailedForGood } from './import-processor.js';
import { startImportRetention } from './import-retention.js';
import { startUploadSweep } from './upload-sweep.js';
import { startFileImports } from './file-imports.js';
import { createWorkerMetrics, measureJobs, startMetricsServer, type MetricsServer, type WorkerMetrics } from './worker-metrics.js';
import { closeQueueWorker } from './close-queue-worker.js';

// note: every worker sweeps; the delete is idempotent, so replicas sweeping together is harmless.
const IDEMPOTENCY_SWEEP_INTERVAL_MS = 10 * 60_000;

export interface RunningWorker {
  worker: Worker<AnyImportJobData, AnyImportResult>;
  metrics: WorkerMetrics;
  /** the port of `GET /metrics` when METRICS_PORT is set */
  metricsPort: number | undefined;
  /** finishes the jobs in hand, takes no new one, then closes its clients */
  close(): Promise<void>;
}

export interface WorkerOptions {
  /** how often this worker purges and sweeps imports (import-retention.ts); tests shorten it */
  importRetentionIntervalMs?: number;
  /** how often this worker deletes abandoned uploads (upload-sweep.ts); tests shorten it */
  uploadSweepIntervalMs?: number;
  /** how long this worker's fallback waits between looks for file imports without a live job (file-import-fallback.ts) */
  fileImportsPollMs?: number;
}

export async function startWorker(config: Config, log: Logger, options: WorkerOptions = {}): Promise<RunningWorker> {
  // note: one connection more than job slots, for the file imports' worker (file-imports.ts).
  const sql = createSql(config, { max: Math.max(config.workerConcurrency, 2) + 1 });
  const connection = createRedis(config, 'blocking');
  const metrics = createWorkerMetrics(config.workerConcurrency);
  // note: the worker's own commands (the rows of its jobs) share BullMQ's non-blocking client.
  const rowsStore = new ImportRowsStore(connection, config.redisPrefix);
  // note: the replies to the waiting API processes share that client too; they are never awaited.
  const replies = new ImportReplySender(connection, config.redisPrefix, log);
  const processor = measureJobs(createImportProcessor(sql, rowsStore, log, { faults: faultHooks(config, log), replies, attemptTimeoutMs: config.importTimeoutMs }), metrics);
  // note: before the worker takes jobs, so a port already in use stops the start cleanly.
  const metricsServer: MetricsServer | undefined =
    config.metricsPort === undefined ? undefined : await startMetricsServer(metrics.registry, config.host, config.metricsPort, log);
  const worker = new Worker<AnyImportJobData, AnyImportResult>(IMPORT_QUEUE_NAME, processor, {
    connection,
    prefix: config.redisPrefix,
    concurrency: config.workerConcurrency,
    // note: a live worker renews its jobs' locks every half lock duration; a worker that dies
    // holds them until they expire, at most WORKER_LOCK_DURATION_MS after its last renewal.
    // Another worker's stalled check, every half lock duration, then puts the jobs back, so they
    // run again within 1.5 x WORKER_LOCK_DURATION_MS of the death (15 s with the default 10 s),
    // which is safe because writeImport is idempotent by job id. Each worker pays for it with
    // one lock renewal and one stalled check in Redis every 5 s.
    lockDuration: config.workerLockDurationMs,
    stalledInterval: Math.max(1_000, Math.floor(config.workerLockDurationMs / 2)),
    // note: two deaths of its worker fail the job instead of retrying it forever; the failed job
    // wrote nothing, and the API then answers 503 "nothing was written".
    maxStalledCount: 2,
  });
  // note: without an error listener a Redis hiccup would be an unhandled 'error' event.
  worker.on('error', (error) => log.error({ err: error }, 'worker error'));
  const fencing = new Set<Promise<void>>();
  worker.on('failed', (job, error) => {
    log.warn({ jobId: job?.id, requestId: job?.data?.requestId, err: error, attemptsMade: job?.attemptsMade }, 'import job failed');
    replyIfFailedForGood(job, replies);
    if (job === undefined || !failedForGood(job)) return;
    const fenced = recordFailedForGood(sql, job, log).finally(() => fencing.delete(fenced));
    fencing.add(fenced);
  });
  const sweep = setInterval(() => {
    deleteExpiredIdempotencyKeys(sql).then(
      (deleted) => deleted > 0 && log.info({ deleted }, 'expired idempotency keys deleted'),
      (err: unknown) => log.warn({ err }, 'could not delete expired idempotency keys'),
    );
  }, IDEMPOTENCY_SWEEP_INTERVAL_MS);
  sweep.unref();
  const uploadSweep = startUploadSweep(sql, log, options.uploadSweepIntervalMs);
  const retention = startImportRetention(sql, log, {
    retentionDays: config.importRetentionDays,
    purged: metrics.importsPurged,
    intervalMs: options.importRetentionIntervalMs,
  });
  // note: the fallback's adds and retries fail fast while Redis is away, and it looks again later.
  const fileImportsRedis = createRedis(config, 'producer');
  fileImportsRedis.on('error', (err: Error) => log.warn({ err: err.message }, 'redis connection error (file imports queue)'));
  const fileImportQueue = createFileImportQueue(config, fileImportsRedis);
  fileImportQueue.on('error', (err) => log.warn({ err: err.message }, 'file imports queue error'));
  const fileImports = startFileImports(config, { sql, connection, queue: fileImportQueue }, log, {
    rowsWritten: metrics.rowsWritten,
    ...(options.fileImportsPollMs === undefined ? {} : { pollMs: options.fileImportsPollMs }),
  });
  await Promise.all([worker.waitUntilReady(), fileImports.worker.waitUntilReady()]);
  log.info({ concurrency: config.workerConcurrency, queue: IMPORT_QUEUE_NAME }, 'worker started');

  return {
    worker,
    metrics,
    metricsPort: metricsServer?.port,
    async close() {
      clearInterval(sweep);
      await retention.stop();
      await uploadSweep.stop();
      await fileImports.stop();
      await closeQueueWorker(worker);
      await fileImportQueue.close();
      await Promise.all(fencing);
      await metricsServer?.close();
      await sql.end({ timeout: 5 });
      fileImportsRedis.disconnect();
      connection.disconnect();
    },
  };
}
