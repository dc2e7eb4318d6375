import type { Counter } from 'prom-client';
import type { Sql } from '../shared/infra/db.js';
import type { Logger } from '../shared/infra/logger.js';
import { purgeEndedImports, settleUnsettledImports } from '../shared/repositories/import-retention.js';
import { ROWS_TTL_MS } from '../shared/import/rows-store.js';
import { startRepeating, type Repeating } from './repeating.js';

/** How often a worker purges ended imports and sweeps abandoned ones. */
export const IMPORT_RETENTION_INTERVAL_MS = 10 * 60_000;

/**
 * Records one statement takes, and statements one run may make for each of the purge and the
 * sweep. note: a batch of 1,000 took 3 ms (median) on 100,000 imports and 6 ms on 1,000,000
 * (docs/operators.md#import-retention), and holds its locks only that long; ten batches every ten
 * minutes purge up to 1,440,000 imports a day per worker, and what a run leaves is taken by the
 * next run or another worker.
 */
export const IMPORT_RETENTION_BATCH = 1_000;
export const IMPORT_RETENTION_MAX_BATCHES = 10;

/**
 * An import answered 504 still without its record this long after it was accepted can never
 * write: twice the hour its rows wait in Redis (ROWS_TTL_MS), and a job whose rows are gone
 * writes nothing (src/shared/repositories/import-retention.ts).
 */
export const ABANDONED_AFTER_MS = 2 * ROWS_TTL_MS;

export interface ImportRetentionSettings {
  retentionDays: number;
  /** counts the imports purged (bulk_import_imports_purged_total) */
  purged: Counter;
  batch?: number;
  maxBatches?: number;
}

/** What one run did: imports purged, imports answered 504 settled, and of those the ones recorded `failed`. */
export interface ImportRetentionRun {
  purged: number;
  settled: number;
  swept: number;
}

/**
 * One run: the purge, then the sweep, each in batches until one comes back short or the run has
 * made its batches. Never throws: a failure is logged and the next run tries again.
 */
export async function runImportRetention(sql: Sql, log: Logger, settings: ImportRetentionSettings): Promise<ImportRetentionRun> {
  const limit = settings.batch ?? IMPORT_RETENTION_BATCH;
  const maxBatches = settings.maxBatches ?? IMPORT_RETENTION_MAX_BATCHES;
  const purged = await inBatches(limit, maxBatches, async () => {
    const count = await purgeEndedImports(sql, { retentionDays: settings.retentionDays, limit });
    // note: per batch, so a run that fails half-way still counts what it committed.
    settings.purged.inc(count);
    return count;
  }).catch((err: unknown) => {
    log.warn({ err }, 'could not purge ended imports');
    return 0;
  });
  if (purged > 0) log.info({ purged, retentionDays: settings.retentionDays }, 'ended imports purged');
  let swept = 0;
  const settled = await inBatches(limit, maxBatches, async () => {
    const batch = await settleUnsettledImports(sql, { olderThanMs: ABANDONED_AFTER_MS, limit });
    swept += batch.failed;
    return batch.settled;
  }).catch((err: unknown) => {
    log.warn({ err }, 'could not settle imports answered 504');
    return 0;
  });
  if (swept > 0) log.info({ swept, settled }, 'abandoned request imports recorded failed');
  return { purged, settled, swept };
}

async function inBatches(limit: number, maxBatches: number, batch: () => Promise<number>): Promise<number> {
  let total = 0;
  for (let made = 0; made < maxBatches; made += 1) {
    const count = await batch();
    total += count;
    if (count < limit) break;
  }
  return total;
}

/** The retention's runs: `stop` clears the timer and waits for a run under way, so the pool can close after it. */
export type ImportRetention = Repeating;

/**
 * Runs runImportRetention every `intervalMs` in this process, the first time one interval after
 * start (startRepeating: runs never overlap). note: every worker runs it; `skip locked` makes
 * replicas share the work rather than wait on each other.
 */
export function startImportRetention(
  sql: Sql,
  log: Logger,
  settings: ImportRetentionSettings & { intervalMs?: number },
): ImportRetention {
  const intervalMs = settings.intervalMs ?? IMPORT_RETENTION_INTERVAL_MS;
  return startRepeating(intervalMs, () => runImportRetention(sql, log, settings).catch((err: unknown) => log.warn({ err }, 'import retention run failed')));
}
