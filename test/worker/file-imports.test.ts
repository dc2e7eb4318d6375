import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addFileImportJob, createFileImportQueue, type FileImportQueue } from '../../src/shared/import/file-import-queue.js';
import { loadConfig } from '../../src/shared/infra/config.js';
import { createLogger } from '../../src/shared/infra/logger.js';
import { createRedis, waitForRedis } from '../../src/shared/infra/redis.js';
import { holdFileImportWriting, stagedRow } from '../../src/shared/repositories/import-files.js';
import { ListingRowSchema } from '../../src/shared/rows/listing-row.js';
import { startFileImports, type FileImportsSettings } from '../../src/worker/file-imports.js';
import { createWorkerMetrics } from '../../src/worker/worker-metrics.js';
import { sampleValue } from '../support/prometheus.js';
import { openDatabaseWithAccount, type DatabaseWithAccount } from '../support/database-with-account.js';
import { validListing } from '../support/fixtures.js';
import { stageInChunks, stagedRowsLeft } from '../support/staged-file.js';
import { testRedisPrefix } from '../support/test-database.js';
import { testRedisEnv } from '../support/test-redis.js';

/**
 * The workers' file imports (file-imports.ts): a job per import in the `file-imports` queue, run
 * a chunk at a time, and the fallback that gives a job to an import without one. Every import
 * here is inserted without a job, as an API that died before adding it would leave it.
 */
describe('startFileImports', () => {
  let db: DatabaseWithAccount;
  const log = createLogger({ logLevel: 'silent' }, 'test');
  const config = loadConfig({ ...testRedisEnv(), REDIS_PREFIX: testRedisPrefix(), WORKER_LOCK_DURATION_MS: '2000' });
  const producer = createRedis(config, 'producer');
  let queue: FileImportQueue;

  beforeAll(async () => {
    db = await openDatabaseWithAccount('File imports', 8);
    await waitForRedis(producer);
    queue = createFileImportQueue(config, producer);
  });
  afterAll(async () => {
    await queue?.close();
    producer.disconnect();
    await db?.close();
  });

  /** A worker's file imports, on a Redis connection of its own, as startWorker runs them. */
  function startWorkerFileImports(settings: FileImportsSettings, writers = config.fileImportWriters, helpers = config.fileImportHelpers) {
    const connection = createRedis(config, 'blocking');
    const running = startFileImports({ ...config, fileImportWriters: writers, fileImportHelpers: helpers }, { sql: db.sql, connection, queue }, log, settings);
    return {
      async stop() {
        await running.stop();
        connection.disconnect();
      },
    };
  }

  /** A file import as its upload leaves it: `rows` valid listings staged in chunks of `chunkRows`. */
  async function stagedFile(rows: number, chunkRows: number, state = 'queued'): Promise<string> {
    const importId = randomUUID();
    await db.sql.begin(async (tx) => {
      await tx`
        insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, source, created_at)
        values (${importId}, ${db.accountId}, 'listings', 'file-loop', ${rows}, 0, 0, '[]', ${state}, 'file', now())`;
      await stageInChunks(tx, importId, Array.from({ length: rows }, (_, index) => stagedRow(index, ListingRowSchema.parse(validListing()))), chunkRows);
    });
    return importId;
  }

  const stateOf = async (importId: string) => (await db.sql<{ state: string }[]>`select state from imports where job_id = ${importId}`)[0]!.state;
  const writtenBy = async (importId: string) => (await db.sql<{ n: number }[]>`select count(*)::int as n from listings where import_job_id = ${importId}`)[0]!.n;
  const logsOf = async (importId: string) => (await queue.getJobLogs(importId, 0, -1)).logs;
  const jobStateOf = (importId: string) => queue.getJobState(importId);

  it('writes every file import through a job the fallback adds, with two workers, each row once; a file queued later is found by the next look', async () => {
    const first = await stagedFile(450, 40);
    const metrics = createWorkerMetrics(1);
    const settings = { pollMs: 20, rowsWritten: metrics.rowsWritten };
    const workers = [startWorkerFileImports(settings), startWorkerFileImports(settings)];
    try {
      await expect.poll(() => stateOf(first), { timeout: 10_000, interval: 20 }).toBe('completed');
      const later = await stagedFile(90, 40);
      await expect.poll(() => stateOf(later), { timeout: 10_000, interval: 20 }).toBe('completed');
      expect(await writtenBy(first)).toBe(450);
      expect(await writtenBy(later)).toBe(90);
      expect(sampleValue(await metrics.registry.metrics(), 'bulk_import_worker_rows_written_total', { kind: 'listings', source: 'file' })).toBe(540);
      await expect.poll(() => jobStateOf(later), { timeout: 5_000, interval: 20 }).toBe('completed');
    } finally {
      await Promise.all(workers.map((worker) => worker.stop()));
    }
  });

  it('ends the job completed, named by its kind, with its progress and one log line per chunk (one writer)', async () => {
    const importId = await stagedFile(95, 40);
    const worker = startWorkerFileImports({ pollMs: 20 }, 1);
    try {
      await expect.poll(() => jobStateOf(importId), { timeout: 10_000, interval: 20 }).toBe('completed');
      const job = (await queue.getJob(importId))!;
      expect(job.name).toBe('listings');
      expect(job.data).toEqual({ importId });
      expect(job.progress).toEqual({ processed: 95, total: 95 });
      expect(job.returnvalue).toEqual({ state: 'completed' });
      expect(await logsOf(importId)).toEqual([
        'chunk: 40 rows written (40 of 95)',
        'chunk: 40 rows written (80 of 95)',
        'chunk: 15 rows written (95 of 95)',
        'completed: no row left to write',
      ]);
    } finally {
      await worker.stop();
    }
  });

  it('writes a file with several writers: each chunk once, one log line each, and the progress of the whole at the end', async () => {
    expect(config.fileImportWriters).toBe(2);
    const importId = await stagedFile(1_000, 40);
    const worker = startWorkerFileImports({ pollMs: 20 }, 3);
    try {
      await expect.poll(() => jobStateOf(importId), { timeout: 10_000, interval: 20 }).toBe('completed');
      expect(await writtenBy(importId)).toBe(1_000);
      const job = (await queue.getJob(importId))!;
      expect(job.progress).toEqual({ processed: 1_000, total: 1_000 });
      const logs = await logsOf(importId);
      const chunks = logs.filter((line) => line.startsWith('chunk: '));
      expect(chunks).toHaveLength(25);
      expect(chunks.every((line) => line.startsWith('chunk: 40 rows written ('))).toBe(true);
      expect(logs.at(-1)).toBe('completed: no row left to write');
    } finally {
      await worker.stop();
    }
  });

  it.each([
    [3, 'both write chunks of it'],
    [0, 'only the worker running its job writes it'],
  ])('with FILE_IMPORT_HELPERS=%i and two free workers, %s; each row once', async (helpers) => {
    expect(config.fileImportHelpers).toBe(3); // the default
    const importId = await stagedFile(3_000, 20);
    const metrics = [createWorkerMetrics(1), createWorkerMetrics(1)];
    const workers = metrics.map((m) => startWorkerFileImports({ pollMs: 20, rowsWritten: m.rowsWritten }, 1, helpers));
    try {
      await expect.poll(() => stateOf(importId), { timeout: 20_000, interval: 20 }).toBe('completed');
      expect(await writtenBy(importId)).toBe(3_000);
      const written = await Promise.all(metrics.map(async (m) => sampleValue(await m.registry.metrics(), 'bulk_import_worker_rows_written_total', { kind: 'listings', source: 'file' }) ?? 0));
      expect(written[0]! + written[1]!).toBe(3_000);
      if (helpers > 0) {
        expect(Math.min(...written)).toBeGreaterThan(0);
      } else {
        expect(Math.min(...written)).toBe(0);
      }
      await expect.poll(() => jobStateOf(importId), { timeout: 5_000, interval: 20 }).toBe('completed');
      expect((await queue.getJob(importId))!.returnvalue).toEqual({ state: 'completed' });
    } finally {
      await Promise.all(workers.map((worker) => worker.stop()));
    }
  });

  it('stops between chunks when asked, hands the job back to wait, and leaves the rest for the next worker', async () => {
    const importId = await stagedFile(2_000, 10);
    const worker = startWorkerFileImports({ pollMs: 20 });
    await expect.poll(() => writtenBy(importId), { timeout: 10_000, interval: 5 }).toBeGreaterThan(0);
    await worker.stop();
    const atStop = await writtenBy(importId);
    expect(atStop).toBeLessThan(2_000);
    expect(atStop + (await stagedRowsLeft(db.sql, importId))).toBe(2_000);
    expect(await jobStateOf(importId)).toBe('waiting');
    expect(await logsOf(importId)).toContain('handed back: this worker is stopping');

    const next = startWorkerFileImports({ pollMs: 20 });
    try {
      await expect.poll(() => stateOf(importId), { timeout: 10_000, interval: 20 }).toBe('completed');
      expect(await writtenBy(importId)).toBe(2_000);
    } finally {
      await next.stop();
    }
  });

  it('delays the job while another holds the import\'s write lock (a cancel or a completion under way), then writes it', async () => {
    const importId = await stagedFile(30, 10);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    const holder = db.sql.begin(async (tx) => {
      await holdFileImportWriting(tx, importId);
      locked();
      await released;
    });
    await lockTaken;
    const worker = startWorkerFileImports({ pollMs: 20 });
    try {
      await expect.poll(async () => (await logsOf(importId)).some((line) => line.startsWith('busy:')), { timeout: 10_000, interval: 20 }).toBe(true);
      expect(await writtenBy(importId)).toBe(0);
      release();
      await holder;
      await expect.poll(() => stateOf(importId), { timeout: 10_000, interval: 20 }).toBe('completed');
      expect(await writtenBy(importId)).toBe(30);
      // note: the job is marked completed in Redis after the import's commit, a round trip later
      await expect.poll(() => jobStateOf(importId), { timeout: 5_000, interval: 20 }).toBe('completed');
    } finally {
      release();
      await worker.stop();
    }
  });

  it('retries a job that finished while its import is still queued, and the import is written', async () => {
    // a job that ran when its import had ended, then an import queued again under its id: as a
    // job completed by a worker that handed its import on would leave it
    const importId = await stagedFile(0, 10, 'cancelled');
    await addFileImportJob(queue, importId, 'listings');
    // note: no helpers. A helper's job that the first run added would find the import ended and
    // drop its staging, which this test stages again under the same id; in the service an ended
    // import never becomes queued again.
    const worker = startWorkerFileImports({ pollMs: 20 }, config.fileImportWriters, 0);
    try {
      await expect.poll(() => jobStateOf(importId), { timeout: 10_000, interval: 20 }).toBe('completed');
      expect((await queue.getJob(importId))!.returnvalue).toEqual({ state: 'ended' });
      await db.sql.begin(async (tx) => {
        await tx`update imports set state = 'queued', finished_at = null, received = 25 where job_id = ${importId}`;
        await stageInChunks(tx, importId, Array.from({ length: 25 }, (_, index) => stagedRow(index, ListingRowSchema.parse(validListing()))), 10);
      });
      await expect.poll(() => stateOf(importId), { timeout: 10_000, interval: 20 }).toBe('completed');
      expect(await writtenBy(importId)).toBe(25);
      await expect.poll(async () => (await queue.getJob(importId))?.returnvalue, { timeout: 5_000, interval: 20 }).toEqual({ state: 'completed' });
    } finally {
      await worker.stop();
    }
  });
});
