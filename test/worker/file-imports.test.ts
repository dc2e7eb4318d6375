import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/shared/infra/logger.js';
import { stageFileRows } from '../../src/shared/repositories/import-files.js';
import { ListingRowSchema } from '../../src/shared/rows/listing-row.js';
import { startFileImports } from '../../src/worker/file-imports.js';
import { createWorkerMetrics } from '../../src/worker/worker-metrics.js';
import { sampleValue } from '../support/prometheus.js';
import { openDatabaseWithAccount, type DatabaseWithAccount } from '../support/database-with-account.js';
import { validListing } from '../support/fixtures.js';

/** The workers' loop over the file imports recorded in PostgreSQL (file-imports.ts). */
describe('startFileImports', () => {
  let db: DatabaseWithAccount;
  const log = createLogger({ logLevel: 'silent' }, 'test');

  beforeAll(async () => {
    db = await openDatabaseWithAccount('File loop', 8);
  });
  afterAll(async () => {
    await db?.close();
  });

  async function stagedFile(rows: number): Promise<string> {
    const jobId = randomUUID();
    await db.sql.begin(async (tx) => {
      await tx`
        insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, source, created_at)
        values (${jobId}, ${db.accountId}, 'listings', 'file-loop', ${rows}, 0, 0, '[]', 'queued', 'file', now())`;
      await stageFileRows(tx, jobId, Array.from({ length: rows }, (_, index) => ({ index, row: ListingRowSchema.parse(validListing()) })));
    });
    return jobId;
  }

  const stateOf = async (jobId: string) => (await db.sql<{ state: string }[]>`select state from imports where job_id = ${jobId}`)[0]!.state;
  const writtenBy = async (jobId: string) => (await db.sql<{ n: number }[]>`select count(*)::int as n from listings where import_job_id = ${jobId}`)[0]!.n;

  it('writes every queued file import, shared by two workers\' loops, each row once; a file queued later is found by the next look', async () => {
    const first = await stagedFile(450);
    const metrics = createWorkerMetrics(1);
    const settings = { pollMs: 20, chunkRows: 40, rowsWritten: metrics.rowsWritten };
    const loops = [startFileImports(db.sql, log, settings), startFileImports(db.sql, log, settings)];
    try {
      await expect.poll(() => stateOf(first), { timeout: 10_000, interval: 20 }).toBe('completed');
      const later = await stagedFile(90);
      await expect.poll(() => stateOf(later), { timeout: 10_000, interval: 20 }).toBe('completed');
      expect(await writtenBy(first)).toBe(450);
      expect(await writtenBy(later)).toBe(90);
      expect(sampleValue(await metrics.registry.metrics(), 'bulk_import_worker_rows_written_total', { kind: 'listings', source: 'file' })).toBe(540);
    } finally {
      await Promise.all(loops.map((loop) => loop.stop()));
    }
  });

  it('stops between chunks when asked, and leaves the rest for the next worker', async () => {
    const jobId = await stagedFile(2_000);
    const loop = startFileImports(db.sql, log, { pollMs: 20, chunkRows: 10 });
    await expect.poll(() => writtenBy(jobId), { timeout: 10_000, interval: 5 }).toBeGreaterThan(0);
    await loop.stop();
    const atStop = await writtenBy(jobId);
    expect(atStop).toBeLessThan(2_000);
    const [left] = await db.sql<{ n: number }[]>`select count(*)::int as n from import_file_rows where job_id = ${jobId}`;
    expect(atStop + left!.n).toBe(2_000);

    const next = startFileImports(db.sql, log, { pollMs: 20, chunkRows: 500 });
    try {
      await expect.poll(() => stateOf(jobId), { timeout: 10_000, interval: 20 }).toBe('completed');
      expect(await writtenBy(jobId)).toBe(2_000);
    } finally {
      await next.stop();
    }
  });
});
