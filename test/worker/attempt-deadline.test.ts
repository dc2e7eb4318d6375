import { randomUUID } from 'node:crypto';
import type { Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ImportJobData, ImportResult } from '../../src/shared/import/import-job.js';
import { IMPORT_JOB_OPTIONS } from '../../src/shared/import/import-queue.js';
import { encodeImportRows } from '../../src/shared/import/rows-hand-over.js';
import { ImportRowsStore } from '../../src/shared/import/rows-store.js';
import { ListingRowSchema } from '../../src/shared/rows/listing-row.js';
import { validListing } from '../support/fixtures.js';
import { holdImports, waitForHeldImports } from '../support/hold-imports.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { writtenByImport } from '../support/written-by-import.js';

const ATTEMPT_TIMEOUT_MS = 1_000;

/**
 * A write that does not settle (as a statement stranded by a failover does) is given up after
 * IMPORT_TIMEOUT_MS and the job retried, and the rows are still written once. The write here is
 * held for real: another transaction holds the `imports` table locked (holdImports), so the
 * worker's statement waits on PostgreSQL's lock.
 */
describe('an import whose write does not settle', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ env: { IMPORT_TIMEOUT_MS: String(ATTEMPT_TIMEOUT_MS) } });
  });
  afterAll(async () => {
    await service?.close();
  });

  it('gives the attempt up after IMPORT_TIMEOUT_MS and retries it; once the write can go on, the job completes with its rows written once', async () => {
    const account = await service.createAccount();
    const importId = randomUUID();
    const data: ImportJobData = { kind: 'listings', accountId: account.id, requestId: randomUUID(), total: 3, errors: [], rowCount: 3 };
    const rows = Array.from({ length: 3 }, () => ListingRowSchema.parse(validListing()));

    const held = await holdImports(service.sql);
    let job: Job<ImportJobData, ImportResult>;
    try {
      await new ImportRowsStore(service.deps.redis, service.config.redisPrefix).put(importId, encodeImportRows(rows));
      job = (await service.deps.queue.add('listings', data, { ...IMPORT_JOB_OPTIONS, jobId: importId })) as Job<ImportJobData, ImportResult>;
      // The first attempt waits on the lock, is given up and retried: its statement still waits
      // beside the retry's.
      await waitForHeldImports(service.sql, 2);
      const afterGivingUp = (await service.deps.queue.getJob(importId))!;
      expect(afterGivingUp.failedReason).toMatch(/did not settle within 1000 ms; the attempt is given up and retried/);
      expect(afterGivingUp.attemptsMade).toBeGreaterThanOrEqual(1);
      expect(await writtenByImport(service.sql, importId)).toEqual({ listings: 0, imports: 0 });
    } finally {
      await held.release();
    }
    await expect.poll(async () => job.getState(), { timeout: 10_000, interval: 50 }).toBe('completed');
    expect((await service.deps.queue.getJob(importId))!.returnvalue).toEqual({ inserted: 3, skipped: 0, errors: [] });
    // The abandoned statement went on once the lock was free, and so did the retry: one wrote, the other found the record.
    expect(await writtenByImport(service.sql, importId)).toEqual({ listings: 3, imports: 1 });
  });
});
