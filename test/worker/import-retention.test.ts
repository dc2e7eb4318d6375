import { randomUUID } from 'node:crypto';
import type { Job, JobsOptions } from 'bullmq';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../src/shared/infra/config.js';
import { createSql, type Sql } from '../../src/shared/infra/db.js';
import { createLogger, type Logger } from '../../src/shared/infra/logger.js';
import { createRedis, type RedisClient } from '../../src/shared/infra/redis.js';
import type { ImportJobData, ImportResult } from '../../src/shared/import/import-job.js';
import { createImportQueue, type ImportQueue, IMPORT_JOB_OPTIONS } from '../../src/shared/import/import-queue.js';
import { encodeImportRows } from '../../src/shared/import/rows-hand-over.js';
import { ImportRowsStore } from '../../src/shared/import/rows-store.js';
import { recordFileRowErrors, stageFileRows, stagedRow } from '../../src/shared/repositories/import-files.js';
import { findImportRecord, recordImportUnsettled } from '../../src/shared/repositories/import-records.js';
import { purgeEndedImports, settleUnsettledImports } from '../../src/shared/repositories/import-retention.js';
import { ListingRowSchema } from '../../src/shared/rows/listing-row.js';
import { ABANDONED_AFTER_MS, runImportRetention } from '../../src/worker/import-retention.js';
import { createWorkerMetrics, type WorkerMetrics } from '../../src/worker/worker-metrics.js';
import { startWorker, type RunningWorker } from '../../src/worker/worker.js';
import { ImportAbandonedError } from '../../src/worker/write-errors.js';
import { writeImport, type ImportWrite } from '../../src/worker/write-import.js';
import { openDatabaseWithAccount, type DatabaseWithAccount } from '../support/database-with-account.js';
import { validListing } from '../support/fixtures.js';
import { commitGate } from '../support/hold-in-transaction.js';
import { sampleValue } from '../support/prometheus.js';
import { rowError } from '../support/row-errors.js';
import { createTestDatabase, testRedisPrefix, type TestDatabase } from '../support/test-database.js';
import { testRedisEnv } from '../support/test-redis.js';
import { writtenByImport } from '../support/written-by-import.js';
import { LISTINGS_AS_COPY } from '../support/staged-file.js';

const HOUR_MS = 60 * 60_000;
const DAY_MS = 24 * HOUR_MS;
const RETENTION_DAYS = 30;

type ImportState = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';

/** An import record written straight into the table, as old as the test needs; returns its id. */
async function recordImport(
  sql: Sql,
  accountId: string,
  record: { state: ImportState; source?: 'request' | 'file'; createdMsAgo: number; finishedMsAgo?: number },
): Promise<string> {
  const importId = randomUUID();
  const now = Date.now();
  const finishedAt = record.finishedMsAgo === undefined ? null : new Date(now - record.finishedMsAgo);
  await sql`
    insert into imports (job_id, account_id, kind, request_id, inserted, skipped, state, source, created_at, finished_at)
    values (${importId}, ${accountId}, 'listings', 'retention-test', 0, 0, ${record.state}, ${record.source ?? 'request'},
            ${new Date(now - record.createdMsAgo)}, ${finishedAt})`;
  return importId;
}

async function recordedIds(sql: Sql): Promise<string[]> {
  const rows = await sql<{ job_id: string }[]>`select job_id from imports order by job_id`;
  return rows.map((row) => row.job_id);
}

async function stateOf(sql: Sql, importId: string): Promise<{ state: string; finished_at: Date | null } | undefined> {
  const [row] = await sql<{ state: string; finished_at: Date | null }[]>`select state, finished_at from imports where job_id = ${importId}`;
  return row;
}

/**
 * Stages `rows` valid listings, each with an external_id, and `failed` failed rows for a file
 * import, as its upload does: the rows from position 0, the failed ones after them.
 */
async function stageFile(sql: Sql, importId: string, files: { rows: number; failed: number }): Promise<void> {
  await sql.begin(async (tx) => {
    await stageFileRows(tx, importId, Array.from({ length: files.rows }, (_, index) => stagedRow(index, ListingRowSchema.parse(validListing({ external_id: `R-${index}` })))), LISTINGS_AS_COPY);
    await recordFileRowErrors(
      tx,
      importId,
      Array.from({ length: files.failed }, (_, n) => rowError(files.rows + n, 'currency: must be exactly USD', 'not_allowed')),
    );
  });
}

/** What each import has in the file imports' tables, as `{ [importId]: { staged, ids, errors } }`, imports with nothing left out. */
async function fileStaging(sql: Sql): Promise<Record<string, { staged: number; ids: number; errors: number }>> {
  const rows = await sql<{ job_id: string; staged: number; ids: number; errors: number }[]>`
    select job_id, sum(staged)::int as staged, sum(ids)::int as ids, sum(errors)::int as errors from (
      select job_id, rows as staged, 0 as ids, 0 as errors from import_file_chunks
      union all
      select job_id, 0, 1, 0 from import_file_external_ids
      union all
      select job_id, 0, 0, 1 from import_file_errors
    ) as file_rows
    group by job_id`;
  return Object.fromEntries(rows.map((row) => [row.job_id, { staged: row.staged, ids: row.ids, errors: row.errors }]));
}

const silentLog: Logger = createLogger({ logLevel: 'silent' }, 'test');

async function purgedCount(metrics: WorkerMetrics): Promise<number> {
  return sampleValue(await metrics.registry.metrics(), 'bulk_import_imports_purged_total');
}

const twoListings = () => encodeImportRows([ListingRowSchema.parse(validListing()), ListingRowSchema.parse(validListing())]);

describe('the purge of ended imports (purgeEndedImports, runImportRetention)', () => {
  let db: DatabaseWithAccount;

  beforeAll(async () => {
    db = await openDatabaseWithAccount('Retention');
  });
  afterAll(async () => {
    await db?.close();
  });
  beforeEach(async () => {
    await db.sql`delete from imports`;
  });

  const record = (r: Parameters<typeof recordImport>[2]) => recordImport(db.sql, db.accountId, r);

  it('deletes imports that ended more than IMPORT_RETENTION_DAYS ago, and keeps younger and unfinished ones', async () => {
    const past = (RETENTION_DAYS + 1) * DAY_MS;
    const within = (RETENTION_DAYS - 1) * DAY_MS;
    const purged = [
      await record({ state: 'completed', createdMsAgo: past + HOUR_MS, finishedMsAgo: past }),
      await record({ state: 'failed', createdMsAgo: past, finishedMsAgo: past }),
      await record({ state: 'cancelled', source: 'file', createdMsAgo: past + DAY_MS, finishedMsAgo: past }),
      // recorded before migration 0008: no finished_at, it ended when it was recorded
      await record({ state: 'completed', createdMsAgo: past }),
    ];
    const kept = [
      // created long ago, but ended within the retention: the end counts, not the start
      await record({ state: 'completed', createdMsAgo: 2 * past, finishedMsAgo: within }),
      await record({ state: 'failed', createdMsAgo: within, finishedMsAgo: within }),
      await record({ state: 'completed', createdMsAgo: within }),
      // not ended, however old
      await record({ state: 'running', createdMsAgo: 2 * past }),
      await record({ state: 'queued', source: 'file', createdMsAgo: 2 * past }),
    ];

    expect(await purgeEndedImports(db.sql, { retentionDays: RETENTION_DAYS, limit: 1_000 })).toBe(purged.length);
    expect(await recordedIds(db.sql)).toEqual([...kept].sort());
  });

  it('leaves the rows an import wrote, with its id, when it purges the import', async () => {
    const write: ImportWrite = {
      importId: randomUUID(), kind: 'listings', accountId: db.accountId, requestId: 'retention-test', total: 2, errors: [], rowCount: 2, rows: twoListings(),
    };
    await writeImport(db.sql, write);
    await db.sql`update imports set finished_at = now() - make_interval(days => ${RETENTION_DAYS + 1}) where job_id = ${write.importId}`;

    expect(await purgeEndedImports(db.sql, { retentionDays: RETENTION_DAYS, limit: 1_000 })).toBe(1);
    expect(await writtenByImport(db.sql, write.importId)).toEqual({ listings: 2, imports: 0 });
  });

  it('deletes what a purged file import left in import_file_chunks, import_file_external_ids and import_file_errors with it, and keeps the staging of unfinished and younger ones', async () => {
    const past = (RETENTION_DAYS + 1) * DAY_MS;
    const within = (RETENTION_DAYS - 1) * DAY_MS;
    // note: rows can stay staged under an ended import until a chunk next looks at it
    // (writeFileChunk drops them then): the purge must not depend on the staging being empty.
    const completed = await record({ state: 'completed', source: 'file', createdMsAgo: past + HOUR_MS, finishedMsAgo: past });
    await stageFile(db.sql, completed, { rows: 0, failed: 3 });
    const failed = await record({ state: 'failed', source: 'file', createdMsAgo: past, finishedMsAgo: past });
    await stageFile(db.sql, failed, { rows: 5, failed: 2 });
    const cancelled = await record({ state: 'cancelled', source: 'file', createdMsAgo: past, finishedMsAgo: past });
    await stageFile(db.sql, cancelled, { rows: 4, failed: 0 });
    // kept: ended within the retention (its failed rows are still read through /errors), and unfinished however old
    const young = await record({ state: 'completed', source: 'file', createdMsAgo: within, finishedMsAgo: within });
    await stageFile(db.sql, young, { rows: 0, failed: 2 });
    const queued = await record({ state: 'queued', source: 'file', createdMsAgo: 2 * past });
    await stageFile(db.sql, queued, { rows: 6, failed: 1 });
    const running = await record({ state: 'running', source: 'file', createdMsAgo: 2 * past });
    await stageFile(db.sql, running, { rows: 3, failed: 2 });
    expect(Object.keys(await fileStaging(db.sql))).toHaveLength(6);

    expect(await purgeEndedImports(db.sql, { retentionDays: RETENTION_DAYS, limit: 1_000 })).toBe(3);
    expect(await recordedIds(db.sql)).toEqual([young, queued, running].sort());
    expect(await fileStaging(db.sql)).toEqual({
      [young]: { staged: 0, ids: 0, errors: 2 },
      [queued]: { staged: 6, ids: 6, errors: 1 },
      [running]: { staged: 3, ids: 3, errors: 2 },
    });
  });

  it('works in bounded batches, oldest first, and counts what it purged in bulk_import_imports_purged_total', async () => {
    const ended: string[] = [];
    // oldest first: ended[0] ended 40 days and 25 minutes ago, ended[24] 40 days and a minute ago
    for (let i = 25; i >= 1; i -= 1) ended.push(await record({ state: 'completed', createdMsAgo: 40 * DAY_MS + i * 60_000, finishedMsAgo: 40 * DAY_MS + i * 60_000 }));
    const metrics = createWorkerMetrics(1);
    const settings = { retentionDays: RETENTION_DAYS, purged: metrics.importsPurged, batch: 10, maxBatches: 2 };

    expect(await runImportRetention(db.sql, silentLog, settings)).toEqual({ purged: 20, settled: 0, swept: 0 });
    expect(await recordedIds(db.sql)).toEqual(ended.slice(20).sort());
    expect(await purgedCount(metrics)).toBe(20);

    // the next run takes what the last left, and stops at a short batch
    expect(await runImportRetention(db.sql, silentLog, settings)).toEqual({ purged: 5, settled: 0, swept: 0 });
    expect(await recordedIds(db.sql)).toEqual([]);
    expect(await purgedCount(metrics)).toBe(25);
  });

  it('skips an import whose record a transaction holds, instead of waiting for it', async () => {
    const held = await record({ state: 'completed', createdMsAgo: 40 * DAY_MS, finishedMsAgo: 40 * DAY_MS });
    await record({ state: 'completed', createdMsAgo: 40 * DAY_MS, finishedMsAgo: 40 * DAY_MS });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holding = db.sql.begin(async (tx) => {
      await tx`select 1 from imports where job_id = ${held} for update`;
      locked();
      await released;
    });
    await isLocked;
    try {
      expect(await purgeEndedImports(db.sql, { retentionDays: RETENTION_DAYS, limit: 1_000 })).toBe(1);
      expect(await recordedIds(db.sql)).toEqual([held]);
    } finally {
      release();
      await holding;
    }
    // once the transaction ended, the next run takes it
    expect(await purgeEndedImports(db.sql, { retentionDays: RETENTION_DAYS, limit: 1_000 })).toBe(1);
    expect(await recordedIds(db.sql)).toEqual([]);
  });
});

describe('the sweep of imports answered 504 (settleUnsettledImports)', () => {
  let db: DatabaseWithAccount;

  beforeAll(async () => {
    db = await openDatabaseWithAccount('Sweep', 6);
  });
  afterAll(async () => {
    await db?.close();
  });
  beforeEach(async () => {
    await db.sql`delete from imports`;
    await db.sql`delete from unsettled_imports`;
  });

  const sweep = (limit = 1_000) => settleUnsettledImports(db.sql, { olderThanMs: ABANDONED_AFTER_MS, limit });
  const stale = ABANDONED_AFTER_MS + HOUR_MS;
  /** An import answered 504 `msAgo` ago; returns its id. */
  const answered504 = async (msAgo: number) => {
    const importId = randomUUID();
    await recordImportUnsettled(db.sql, { importId, accountId: db.accountId, kind: 'listings', requestId: 'sweep-test', total: 2, errors: [], createdAt: Date.now() - msAgo });
    return importId;
  };
  const unsettled = async () => (await db.sql<{ job_id: string }[]>`select job_id from unsettled_imports order by job_id`).map((row) => row.job_id);

  function importOf(importId: string): ImportWrite {
    return { importId, kind: 'listings', accountId: db.accountId, requestId: 'sweep-test', total: 2, errors: [], rowCount: 2, rows: twoListings() };
  }

  it('is twice the hour the rows of a request import wait in Redis', () => {
    expect(ABANDONED_AFTER_MS).toBe(2 * HOUR_MS);
  });

  it('settles the imports whose record shows, records stale ones failed, ended now, and leaves young ones to their workers', async () => {
    const abandoned = await answered504(stale);
    const young = await answered504(HOUR_MS);
    const settledStale = await answered504(stale);
    const settledYoung = await answered504(HOUR_MS);
    for (const importId of [settledStale, settledYoung]) await writeImport(db.sql, importOf(importId));
    const startedAt = Date.now();

    expect(await sweep()).toEqual({ settled: 3, failed: 1 });
    const after = await stateOf(db.sql, abandoned);
    expect(after?.state).toBe('failed');
    expect(after!.finished_at!.getTime()).toBeGreaterThanOrEqual(startedAt - 1_000);
    for (const importId of [settledStale, settledYoung]) expect((await stateOf(db.sql, importId))?.state).toBe('completed');
    expect(await stateOf(db.sql, young)).toBeUndefined();
    expect(await unsettled()).toEqual([young]);
    expect(await sweep()).toEqual({ settled: 0, failed: 0 });
  });

  it('works in bounded batches, and runImportRetention makes at most its batches per run', async () => {
    for (let i = 0; i < 25; i += 1) await answered504(stale + i * 60_000);
    const settings = { retentionDays: RETENTION_DAYS, purged: createWorkerMetrics(1).importsPurged, batch: 10, maxBatches: 2 };
    expect(await runImportRetention(db.sql, silentLog, settings)).toEqual({ purged: 0, settled: 20, swept: 20 });
    expect(await runImportRetention(db.sql, silentLog, settings)).toEqual({ purged: 0, settled: 5, swept: 5 });
  });

  it('fences the job of an import it recorded failed: a later writeImport writes nothing (ImportAbandonedError)', async () => {
    const importId = await answered504(stale);
    expect(await sweep()).toEqual({ settled: 1, failed: 1 });

    await expect(writeImport(db.sql, importOf(importId))).rejects.toBeInstanceOf(ImportAbandonedError);
    expect(await writtenByImport(db.sql, importId)).toEqual({ listings: 0, imports: 1 });
    expect(await findImportRecord(db.sql, importId)).toEqual({ state: 'failed' });
  });

  it('never turns failed an import a worker transaction is completing: it waits for it and finds the record', async () => {
    const importId = await answered504(stale);
    const gate = commitGate();
    const writing = writeImport(db.sql, importOf(importId), { beforeCommit: gate.beforeCommit });
    await gate.reached;
    // the transaction holds the record uncommitted: the sweep's insert waits for it
    const sweeping = sweep();
    setTimeout(() => gate.release(), 300);
    expect(await writing).toEqual({ inserted: 2, skipped: 0, errors: [] });
    expect(await sweeping).toEqual({ settled: 1, failed: 0 });
    expect(await findImportRecord(db.sql, importId)).toMatchObject({ state: 'completed' });
    expect(await writtenByImport(db.sql, importId)).toEqual({ listings: 2, imports: 1 });
  });
});

/**
 * The real worker (startWorker) on a queue of its own: its periodic purge and sweep, and the
 * record of a job that failed for good.
 */
describe('a running worker: retention on its interval, and jobs that failed for good', () => {
  let database: TestDatabase;
  let sql: Sql;
  let accountId: string;
  let config: Config;
  let worker: RunningWorker;
  let redis: RedisClient;
  let queue: ImportQueue;
  let rowsStore: ImportRowsStore;
  const logLines: string[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    config = loadConfig({ DATABASE_URL: database.url, ...testRedisEnv(), REDIS_PREFIX: testRedisPrefix(), WORKER_CONCURRENCY: '1', LOG_LEVEL: 'info' });
    sql = createSql(config, { max: 4 });
    const [account] = await sql<{ id: string }[]>`insert into accounts (display_name, subscription_tier) values ('Failing', 'global') returning id`;
    accountId = account!.id;
    redis = createRedis(config, 'blocking');
    queue = createImportQueue(config, redis);
    rowsStore = new ImportRowsStore(redis, config.redisPrefix);
    const log = createLogger(config, 'test', { write: (line: string) => void logLines.push(line) });
    worker = await startWorker(config, log, { importRetentionIntervalMs: 200 });
  });
  afterAll(async () => {
    await worker?.close();
    await queue?.close();
    redis?.disconnect();
    await sql?.end();
    await database?.drop();
  });

  function jobData(overrides: Partial<ImportJobData> = {}): ImportJobData {
    return { kind: 'listings', accountId, requestId: randomUUID(), total: 2, errors: [], rowCount: 2, ...overrides };
  }

  /** An import answered 504: recorded unsettled by the API, its job still to run. */
  async function answered504(importId: string, data: ImportJobData, msAgo = 0): Promise<void> {
    await recordImportUnsettled(sql, { importId, accountId, kind: 'listings', requestId: data.requestId, total: data.total, errors: [], createdAt: Date.now() - msAgo });
  }

  async function add(data: ImportJobData, importId: string, options: JobsOptions = {}): Promise<Job<ImportJobData, ImportResult>> {
    return (await queue.add('listings', data, { ...IMPORT_JOB_OPTIONS, ...options, jobId: importId })) as Job<ImportJobData, ImportResult>;
  }

  async function settled(importId: string): Promise<{ state: string; attemptsMade: number; failedReason: string }> {
    await expect.poll(() => queue.getJobState(importId), { timeout: 15_000 }).toMatch(/^(completed|failed)$/);
    const job = (await queue.getJob(importId))!;
    return { state: await job.getState(), attemptsMade: job.attemptsMade, failedReason: job.failedReason };
  }

  const loggedLines = () => logLines.flatMap((chunk) => chunk.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>));

  it('purges and sweeps on its interval, counting what it purged', async () => {
    const old = await recordImport(sql, accountId, { state: 'completed', createdMsAgo: 40 * DAY_MS, finishedMsAgo: 40 * DAY_MS });
    const abandoned = randomUUID();
    await answered504(abandoned, jobData(), 3 * HOUR_MS);

    await expect.poll(() => stateOf(sql, old), { timeout: 5_000 }).toBeUndefined();
    await expect.poll(async () => (await stateOf(sql, abandoned))?.state, { timeout: 5_000 }).toBe('failed');
    expect(sampleValue(await worker.metrics.registry.metrics(), 'bulk_import_imports_purged_total')).toBe(1);
    expect(loggedLines()).toContainEqual(expect.objectContaining({ msg: 'ended imports purged', purged: 1 }));
    expect(loggedLines()).toContainEqual(expect.objectContaining({ msg: 'abandoned request imports recorded failed', swept: 1, settled: 1 }));
  });

  it('records the import of a job that failed at once (UnrecoverableError) failed: answered 504, it no longer reads running', async () => {
    const importId = randomUUID();
    const data = jobData();
    await answered504(importId, data);
    // no rows stored: they are gone, and the job fails for good on its first attempt
    await add(data, importId);

    expect(await settled(importId)).toMatchObject({ state: 'failed', attemptsMade: 1 });
    await expect.poll(() => findImportRecord(sql, importId), { timeout: 5_000 }).toEqual({ state: 'failed' });
    expect((await stateOf(sql, importId))?.finished_at).not.toBeNull();
  });

  it('records the import of a job whose attempts are spent failed', async () => {
    const importId = randomUUID();
    const data = jobData();
    await answered504(importId, data);
    // rows Redis cannot read as a string (WRONGTYPE): an error a retry might not meet, so it is retried
    await redis.rpush(`${config.redisPrefix}:import-rows:${importId}`, 'not rows');
    await add(data, importId, { attempts: 2, backoff: { type: 'fixed', delay: 100 } });

    expect(await settled(importId)).toMatchObject({ state: 'failed', attemptsMade: 2 });
    await expect.poll(() => findImportRecord(sql, importId), { timeout: 5_000 }).toEqual({ state: 'failed' });
  });

  it('does not record an attempt that is retried: the retry writes the import', async () => {
    const importId = randomUUID();
    const data = jobData();
    await answered504(importId, data);
    const rowsKey = `${config.redisPrefix}:import-rows:${importId}`;
    await redis.rpush(rowsKey, 'not rows');
    await add(data, importId, { attempts: 3, backoff: { type: 'fixed', delay: 1_000 } });

    // the first attempt failed and waits for its retry; the rows become readable meanwhile
    await expect.poll(async () => (await queue.getJob(importId))?.attemptsMade, { timeout: 10_000 }).toBe(1);
    await redis.del(rowsKey);
    await rowsStore.put(importId, twoListings());

    expect(await settled(importId)).toMatchObject({ state: 'completed', attemptsMade: 2 });
    expect(await findImportRecord(sql, importId)).toMatchObject({ state: 'completed', result: { inserted: 2 } });
    expect(await writtenByImport(sql, importId)).toEqual({ listings: 2, imports: 1 });
  });

  it('records the import of a job that stalled too often failed', async () => {
    const importId = randomUUID();
    const data = jobData();
    await answered504(importId, data);
    await rowsStore.put(importId, twoListings());
    // note: what BullMQ's stalled check (moveStalledJobsToWait) does to a job stalled more than
    // maxStalledCount times: it marks a deferred failure, and puts the job back to wait. The job
    // is delayed here so that no worker takes it before the mark.
    await add(data, importId, { delay: 500 });
    await redis.hset(queue.toKey(importId), 'defa', 'job stalled more than allowable limit');

    expect(await settled(importId)).toMatchObject({ state: 'failed', failedReason: 'job stalled more than allowable limit' });
    await expect.poll(() => findImportRecord(sql, importId), { timeout: 5_000 }).toEqual({ state: 'failed' });
    expect(await writtenByImport(sql, importId)).toEqual({ listings: 0, imports: 1 });
  });

  it('records nothing for a dry run, a job whose data does not parse, or a job no answer recorded', async () => {
    const dryRun = randomUUID();
    await add(jobData({ dryRun: true }), dryRun);
    const malformed = randomUUID();
    await add(jobData({ accountId: 'not-a-uuid' }), malformed);
    // a job that did not come from the API (anything with Redis access can add one)
    const unrecorded = randomUUID();
    await add(jobData(), unrecorded);
    // note: one job at a time (WORKER_CONCURRENCY 1), in order: once the last is recorded, the
    // three before it were decided
    const last = randomUUID();
    const lastData = jobData();
    await answered504(last, lastData);
    await add(lastData, last);

    for (const importId of [dryRun, malformed, unrecorded, last]) expect((await settled(importId)).state).toBe('failed');
    await expect.poll(() => findImportRecord(sql, last), { timeout: 5_000 }).toEqual({ state: 'failed' });
    expect(await findImportRecord(sql, dryRun)).toBeUndefined();
    expect(await findImportRecord(sql, malformed)).toBeUndefined();
    expect(await findImportRecord(sql, unrecorded)).toBeUndefined();
  });
});
