import { randomUUID } from 'node:crypto';
import type { Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ImportResult, ImportJobData } from '../../src/shared/import/import-job.js';
import { IMPORT_JOB_OPTIONS } from '../../src/shared/import/import-queue.js';
import { ImportRowsStore } from '../../src/shared/import/rows-store.js';
import { encodeImportRows } from '../../src/shared/import/rows-hand-over.js';
import { ListingRowSchema, type ListingRow } from '../../src/shared/rows/listing-row.js';
import { validListing } from '../support/fixtures.js';
import { startTestService, type TestAccount, type TestService } from '../support/test-service.js';
import { writtenByImport } from '../support/written-by-import.js';

/**
 * The queue is a trust boundary: a job that did not come from the API (forged, corrupted) must
 * fail for good and write nothing, whatever its rows hold.
 */
describe('import jobs that did not come from the API', () => {
  let service: TestService;
  let account: TestAccount;
  let rowsStore: ImportRowsStore;

  beforeAll(async () => {
    service = await startTestService();
    account = await service.createAccount();
    rowsStore = new ImportRowsStore(service.deps.redis, service.config.redisPrefix);
  });
  afterAll(async () => {
    await service?.close();
  });

  const storedListing = (overrides: Partial<Record<keyof ListingRow, unknown>> = {}): ListingRow =>
    ({ ...ListingRowSchema.parse(validListing()), ...overrides }) as ListingRow;

  function jobData(rowCount: number): ImportJobData {
    return { kind: 'listings', accountId: account.id, requestId: randomUUID(), total: rowCount, errors: [], rowCount };
  }

  /** Adds a job the way the API does: its rows first, then the job. */
  async function addJob(data: ImportJobData, rows: string | null, importId: string = randomUUID()): Promise<Job<ImportJobData, ImportResult>> {
    if (rows !== null) await rowsStore.put(importId, rows);
    // note: the queue carries every action's jobs; this one is an upsert's
    return (await service.deps.queue.add('listings', data, { ...IMPORT_JOB_OPTIONS, jobId: importId })) as Job<ImportJobData, ImportResult>;
  }

  async function settle(job: Job<ImportJobData, ImportResult>): Promise<{ state: string; attemptsMade: number; failedReason: string }> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const state = await job.getState();
      if (state === 'completed' || state === 'failed' || Date.now() > deadline) {
        const fresh = (await service.deps.queue.getJob(job.id!))!;
        return { state, attemptsMade: fresh.attemptsMade, failedReason: fresh.failedReason };
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  const writtenBy = (importId: string) => writtenByImport(service.sql, importId);

  it('writes a well-formed job (the control case)', async () => {
    const job = await addJob(jobData(2), encodeImportRows([storedListing(), storedListing()]));
    expect((await settle(job)).state).toBe('completed');
    expect(await writtenBy(job.id!)).toEqual({ listings: 2, imports: 1 });
    // Its rows are deleted once written (right after the job completes, not before).
    await expect.poll(() => rowsStore.get(job.id!), { timeout: 2_000 }).toBeNull();
  });

  it('answers a job that runs again after its rows were deleted with the recorded result', async () => {
    const first = await addJob(jobData(1), encodeImportRows([storedListing()]));
    expect((await settle(first)).state).toBe('completed');
    // The same job id queued again (as after a crash between commit and acknowledgement).
    await first.remove();
    const again = await addJob(jobData(1), null, first.id);
    expect((await settle(again)).state).toBe('completed');
    expect(again.id).toBe(first.id);
    expect((await service.deps.queue.getJob(again.id!))!.returnvalue).toEqual({ inserted: 1, skipped: 0, errors: [] });
    expect(await writtenBy(first.id!)).toEqual({ listings: 1, imports: 1 });
  });

  it('fails a job whose rows are gone on its first attempt and writes nothing', async () => {
    const job = await addJob(jobData(1), null);
    expect(await settle(job)).toMatchObject({ state: 'failed', attemptsMade: 1, failedReason: 'import job rows are gone; nothing was written' });
    expect(await writtenBy(job.id!)).toEqual({ listings: 0, imports: 0 });
  });

  it.each([
    ['a title over the stored length', () => encodeImportRows([storedListing(), storedListing({ title: 'x'.repeat(121) })]), 2],
    ['a category that does not exist', () => encodeImportRows([storedListing({ category: 'weapons' })]), 1],
    ['a price that is not a whole number', () => encodeImportRows([storedListing({ price_cents: 10.5 })]), 1],
    ['more than 8 photos', () => encodeImportRows([storedListing({ photo_urls: Array(9).fill('https://cdn.example.com/a.jpg') })]), 1],
    ['a NUL character', () => encodeImportRows([storedListing({ description: 'a\u0000b' })]), 1],
    ['a missing required field', () => JSON.stringify([{ ...storedListing(), material: undefined }]), 1],
    ['fewer rows than announced', () => encodeImportRows([storedListing()]), 2],
    ['rows that are not JSON', () => '[{"title": ', 1],
    ['rows that are not an array of objects', () => '[1, 2]', 2],
  ])('fails a job with %s on its first attempt and writes nothing', async (_name, rows, rowCount) => {
    const job = await addJob(jobData(rowCount), rows());
    const outcome = await settle(job);
    expect(outcome).toMatchObject({ state: 'failed', attemptsMade: 1 });
    expect(await writtenBy(job.id!)).toEqual({ listings: 0, imports: 0 });
    expect(await rowsStore.get(job.id!)).toBeNull();
  });

  it('fails a job whose counts do not add up, without touching the database', async () => {
    const job = await addJob({ ...jobData(1), total: 5 }, encodeImportRows([storedListing()]));
    expect(await settle(job)).toMatchObject({ state: 'failed', attemptsMade: 1, failedReason: 'import job counts do not add up' });
    expect(await writtenBy(job.id!)).toEqual({ listings: 0, imports: 0 });
  });
});
