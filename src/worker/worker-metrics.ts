import { createServer, type Server, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { Job } from 'bullmq';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { apiErrors } from '../shared/errors/api-errors.js';
import type { ApiError } from '../shared/errors/api-error.js';
import { IMPORT_KIND_NAMES } from '../shared/import/import-kinds.js';
import type { AnyImportJobData, AnyImportResult } from '../shared/import/row-removal-job.js';
import type { Logger } from '../shared/infra/logger.js';
import { createMetricsRegistry } from '../shared/infra/metrics-registry.js';

const JOB_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export interface WorkerMetrics {
  registry: Registry;
  jobDuration: Histogram<'kind' | 'outcome'>;
  rowsWritten: Counter<'kind' | 'source'>;
  busySlots: Gauge;
  importsPurged: Counter;
}

/**
 * note: busy and total slots make the autoscaling signal (their ratio, summed over workers).
 * Queue depth cannot be one: the API withdraws a job no worker took within
 * IMPORT_PICKUP_TIMEOUT_MS, so the waiting count stays small however short of workers we are.
 */
export function createWorkerMetrics(concurrency: number): WorkerMetrics {
  const registry = createMetricsRegistry();
  new Gauge({
    name: 'bulk_import_worker_slots',
    help: 'Import jobs this worker runs at once (WORKER_CONCURRENCY)',
    registers: [registry],
  }).set(concurrency);
  return {
    registry,
    busySlots: new Gauge({
      name: 'bulk_import_worker_busy_slots',
      help: 'Import jobs this worker has in hand right now, at most bulk_import_worker_slots',
      registers: [registry],
    }),
    jobDuration: new Histogram({
      name: 'bulk_import_job_duration_seconds',
      help: 'Time one attempt of an import job took in this worker, by kind and outcome (completed or failed)',
      labelNames: ['kind', 'outcome'] as const,
      buckets: JOB_BUCKETS,
      registers: [registry],
    }),
    rowsWritten: new Counter({
      name: 'bulk_import_worker_rows_written_total',
      help: 'Rows this worker created or updated, by kind and source: request (a bulk request\'s job) or file (a chunk of a whole file); dry runs not counted',
      labelNames: ['kind', 'source'] as const,
      registers: [registry],
    }),
    importsPurged: new Counter({
      name: 'bulk_import_imports_purged_total',
      help: 'Ended imports this worker deleted once IMPORT_RETENTION_DAYS had passed',
      registers: [registry],
    }),
  };
}

type Processor = (job: Job<AnyImportJobData, AnyImportResult>) => Promise<AnyImportResult>;

/**
 * Times each attempt, counts the rows of completed jobs and the jobs in hand. note: the kind
 * label comes from a closed list, since anything with Redis access can add a job with any data.
 */
export function measureJobs(processor: Processor, metrics: WorkerMetrics): Processor {
  return async function measuredImport(job) {
    const kind: string = IMPORT_KIND_NAMES.find((name) => name === job.data?.kind) ?? 'unknown';
    const stopTimer = metrics.jobDuration.startTimer({ kind });
    // note: given back in the finally, so the count stays exact whatever the outcome and however
    // many jobs run at once.
    metrics.busySlots.inc();
    try {
      const result = await processor(job);
      stopTimer({ outcome: 'completed' });
      // note: a dry run rolled its rows back; an update writes a row as an insert does.
      if (job.data?.dryRun !== true) metrics.rowsWritten.inc({ kind, source: 'request' }, result.inserted + (result.updated ?? 0));
      return result;
    } catch (error) {
      stopTimer({ outcome: 'failed' });
      throw error;
    } finally {
      metrics.busySlots.dec();
    }
  };
}

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

/**
 * `GET /metrics` on its own port, with no authentication: it must stay on a private network
 * (the scrape network), never be published.
 */
export async function startMetricsServer(registry: Registry, host: string, port: number, log: Logger): Promise<MetricsServer> {
  // note: the API's error bodies (the catalogue's text and code), so a client reads both alike.
  const sendError = (response: ServerResponse, error: ApiError) =>
    response.writeHead(error.statusCode, { 'content-type': 'application/json' }).end(JSON.stringify(error.body));
  const server: Server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url !== '/metrics') {
      sendError(response, apiErrors.notFound());
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (err: unknown) => {
        log.warn({ err }, 'could not collect worker metrics');
        sendError(response, apiErrors.internal());
      },
    );
  });
  server.listen(port, host);
  await once(server, 'listening');
  const bound = (server.address() as AddressInfo).port;
  log.info({ port: bound }, 'worker metrics listening on /metrics');
  return {
    port: bound,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
