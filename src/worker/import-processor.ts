import { UnrecoverableError, type Job } from 'bullmq';
import { z } from 'zod';
import { BULK_KINDS, BULK_KIND_NAMES } from '../shared/bulk-kinds.js';
import type { Sql } from '../shared/db.js';
import type { BulkResult, ImportJobData } from '../shared/import-queue.js';
import type { Logger } from '../shared/logger.js';
import { AccountGoneError, writeImport, type ImportWrite } from '../shared/repositories/imports.js';
import { validateRows } from '../shared/rows/validate-rows.js';
import type { FaultHooks } from './fault-injection.js';

const JobDataSchema = z.object({
  kind: z.enum(BULK_KIND_NAMES as ['machines', 'listings']),
  accountId: z.uuid(),
  requestId: z.string().min(1),
  total: z.number().int().positive(),
  errors: z.array(z.object({ index: z.number().int().nonnegative(), reason: z.string() })),
  rows: z.array(z.unknown()).min(1),
});

/**
 * Re-checks the payload (the queue is a trust boundary: anything with Redis access can add a
 * job) against the shape of normalised rows, then writes the import.
 */
export function createImportProcessor(sql: Sql, log: Logger, faults: FaultHooks = {}) {
  return async function processImport(job: Job<ImportJobData, BulkResult>): Promise<BulkResult> {
    const jobLog = log.child({ jobId: job.id, requestId: job.data?.requestId });
    const parsed = JobDataSchema.safeParse(job.data);
    if (!parsed.success || job.id === undefined) {
      throw new UnrecoverableError('malformed import job payload');
    }
    const data = parsed.data;
    const checked = validateRows(BULK_KINDS[data.kind].storedSchema, data.rows);
    if (checked.errors.length > 0 || data.rows.length + data.errors.length !== data.total) {
      throw new UnrecoverableError('import job rows do not match the row schema');
    }
    const started = performance.now();
    let result: BulkResult;
    try {
      result = await writeImport(sql, { ...data, rows: checked.rows, jobId: job.id } as ImportWrite, faults);
    } catch (error) {
      // A retry cannot bring a deleted account back; anything else (a dropped connection) may pass.
      if (error instanceof AccountGoneError) throw new UnrecoverableError(error.message);
      throw error;
    }
    faults.afterCommit?.();
    jobLog.info(
      { kind: data.kind, accountId: data.accountId, inserted: result.inserted, skipped: result.skipped, ms: Math.round(performance.now() - started) },
      'import written',
    );
    return result;
  };
}
