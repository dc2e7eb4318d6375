import type { Sql } from '../shared/infra/db.js';
import type { Logger } from '../shared/infra/logger.js';
import { sweepAbandonedUploads, UPLOAD_ABANDONED_AFTER_MS } from '../shared/repositories/file-uploads.js';
import { startRepeating, type Repeating } from './repeating.js';

/** How often a worker deletes abandoned uploads: a third of the time after which one is abandoned. */
export const UPLOAD_SWEEP_INTERVAL_MS = UPLOAD_ABANDONED_AFTER_MS / 3;

/** Uploads one run deletes at most; what it leaves is the next run's. */
const UPLOAD_SWEEP_BATCH = 100;

/**
 * Deletes, every UPLOAD_SWEEP_INTERVAL_MS, the uploads whose API process died while it received
 * them, with what they staged (src/shared/repositories/file-uploads.ts): within some 40 s of the
 * death. note: every worker runs it; `skip locked` makes them share it.
 */
export function startUploadSweep(sql: Sql, log: Logger, intervalMs = UPLOAD_SWEEP_INTERVAL_MS): Repeating {
  return startRepeating(intervalMs, () =>
    sweepAbandonedUploads(sql, { limit: UPLOAD_SWEEP_BATCH }).then(
      (swept) => swept > 0 && log.info({ swept }, 'abandoned uploads deleted'),
      (err: unknown) => log.warn({ err }, 'could not delete abandoned uploads'),
    ),
  );
}
