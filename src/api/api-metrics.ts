import type { Queue } from 'bullmq';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { ImportKind } from '../shared/import/import-kinds.js';
import type { ImportResult } from '../shared/import/import-job.js';
import type { Logger } from '../shared/infra/logger.js';
import { createMetricsRegistry } from '../shared/infra/metrics-registry.js';

/** The queue states the gauge reports, counted on each scrape. */
const QUEUE_STATES = ['waiting', 'active', 'failed', 'delayed'] as const;

// note: up to 60 s, the default IMPORT_TIMEOUT_MS, so a slow import lands in a real bucket.
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** The API's Prometheus metrics, served on `GET /metrics`. */
export interface ApiMetrics {
  registry: Registry;
  httpDuration: Histogram<'method' | 'route' | 'status'>;
  rows: Counter<'kind' | 'outcome'>;
  rateLimited: Counter<'window'>;
  authLockouts: Counter;
  /** the rows of an import's 201 (not of a replay or a dry run) */
  recordRows(kind: ImportKind, result: ImportResult): void;
}

export function createApiMetrics(queue: Pick<Queue, 'getJobCounts'>, log: Logger): ApiMetrics {
  const registry = createMetricsRegistry();
  const registers = [registry];
  const rows = new Counter({
    name: 'bulk_import_rows_total',
    help: 'Rows in 201 replies to bulk imports, by kind and outcome (inserted, updated, unchanged or skipped); Idempotency-Key replays and dry runs are not counted',
    labelNames: ['kind', 'outcome'] as const,
    registers,
  });
  new Gauge({
    name: 'bulk_import_queue_jobs',
    help: 'Import jobs in the queue by state, read from Redis on each scrape (every API replica reports the same queue)',
    labelNames: ['state'] as const,
    registers,
    async collect() {
      try {
        const counts = await queue.getJobCounts(...QUEUE_STATES);
        for (const state of QUEUE_STATES) this.set({ state }, counts[state] ?? 0);
      } catch (error) {
        // note: no value rather than a stale one; the scrape itself still succeeds.
        this.reset();
        log.warn({ err: error }, 'could not read the import queue counts for /metrics');
      }
    },
  });
  return {
    registry,
    httpDuration: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'API request duration by method, route pattern ("unmatched" for 404s) and status',
      labelNames: ['method', 'route', 'status'] as const,
      buckets: HTTP_BUCKETS,
      registers,
    }),
    rows,
    rateLimited: new Counter({
      name: 'bulk_import_rate_limited_total',
      help: 'Requests refused with 429 by an account quota, by window (per-minute, per-day)',
      labelNames: ['window'] as const,
      registers,
    }),
    authLockouts: new Counter({
      name: 'bulk_import_auth_lockouts_total',
      help: 'Requests refused with 429 because their IP is locked out after failed authentications',
      registers,
    }),
    recordRows(kind, { inserted, updated, unchanged, skipped }) {
      rows.inc({ kind, outcome: 'inserted' }, inserted);
      // note: only imports that matched external ids have these outcomes; others add no series.
      if (updated !== undefined) rows.inc({ kind, outcome: 'updated' }, updated);
      if (unchanged !== undefined) rows.inc({ kind, outcome: 'unchanged' }, unchanged);
      rows.inc({ kind, outcome: 'skipped' }, skipped);
    },
  };
}
