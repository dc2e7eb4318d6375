import type { Queue } from 'bullmq';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { ImportKind } from '../shared/import/import-kinds.js';
import type { AnyImportResult } from '../shared/import/row-removal-job.js';
import type { Logger } from '../shared/infra/logger.js';
import { createMetricsRegistry } from '../shared/infra/metrics-registry.js';

/** The queue states the gauge reports, counted on each scrape. */
const QUEUE_STATES = ['waiting', 'active', 'failed', 'delayed'] as const;

/**
 * What a 429 of bulk_import_rate_limited_total ran into: an account quota's window (per-minute,
 * per-day), the account's imports in flight (ACCOUNT_MAX_IN_FLIGHT) or its file imports queued or
 * running (ACCOUNT_MAX_FILE_IMPORTS). note: the label keeps its first name, `window`, so the
 * series counted before the last two were added stay the same series.
 */
export const RATE_LIMITED_WINDOWS = ['per-minute', 'per-day', 'concurrency', 'file-imports'] as const;

// note: up to 60 s, the default IMPORT_TIMEOUT_MS, so a slow import lands in a real bucket.
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** The API's Prometheus metrics, served on `GET /metrics`. */
export interface ApiMetrics {
  registry: Registry;
  httpDuration: Histogram<'method' | 'route' | 'status'>;
  rows: Counter<'kind' | 'outcome'>;
  /** 429s of an account limit, by window (RATE_LIMITED_WINDOWS) */
  rateLimited: Counter<'window'>;
  /** 429s of locked-out addresses on `/v1/api/*` (API keys and session tokens) */
  authLockouts: Counter;
  /** 429s of locked-out addresses on `/admin/queues` and `/metrics` (their own lockout) */
  adminLockouts: Counter;
  /** the rows of an import's 201, or of an archive's or delete's 200 (not of a replay or a dry run) */
  recordRows(kind: ImportKind, result: AnyImportResult): void;
}

export function createApiMetrics(queue: Pick<Queue, 'getJobCounts'>, log: Logger): ApiMetrics {
  const registry = createMetricsRegistry();
  const registers = [registry];
  const rows = new Counter({
    name: 'bulk_import_rows_total',
    help: 'Rows in 201 replies to bulk imports and 200 replies to bulk-archive and bulk-delete, by kind and outcome (inserted, updated, unchanged, archived, deleted or skipped); Idempotency-Key replays and dry runs are not counted',
    labelNames: ['kind', 'outcome'] as const,
    registers,
  });
  const rateLimited = new Counter({
    name: 'bulk_import_rate_limited_total',
    help: 'Requests refused with 429 by an account limit, by window: per-minute, per-day (quotas), concurrency (ACCOUNT_MAX_IN_FLIGHT), file-imports (ACCOUNT_MAX_FILE_IMPORTS)',
    labelNames: ['window'] as const,
    registers,
  });
  // note: every window from 0, so rate() and increase() see the first refusal of a process.
  for (const window of RATE_LIMITED_WINDOWS) rateLimited.inc({ window }, 0);
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
    rateLimited,
    authLockouts: new Counter({
      name: 'bulk_import_auth_lockouts_total',
      help: 'Requests to /v1/api/* refused with 429 because their IP is locked out after failed authentications',
      registers,
    }),
    adminLockouts: new Counter({
      name: 'bulk_import_admin_lockouts_total',
      help: 'Requests to /admin/queues or /metrics refused with 429 because their IP is locked out after wrong admin logins',
      registers,
    }),
    recordRows(kind, { inserted, updated, unchanged, archived, deleted, skipped }) {
      rows.inc({ kind, outcome: 'inserted' }, inserted);
      // note: only imports that matched external ids (and archives) have these outcomes; others add no series.
      if (updated !== undefined) rows.inc({ kind, outcome: 'updated' }, updated);
      if (unchanged !== undefined) rows.inc({ kind, outcome: 'unchanged' }, unchanged);
      if (archived !== undefined) rows.inc({ kind, outcome: 'archived' }, archived);
      if (deleted !== undefined) rows.inc({ kind, outcome: 'deleted' }, deleted);
      rows.inc({ kind, outcome: 'skipped' }, skipped);
    },
  };
}
