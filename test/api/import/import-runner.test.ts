import { randomUUID } from 'node:crypto';
import { Job, Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { importErrorReply } from '../../../src/api/import/import-error-replies.js';
import { ImportNotWrittenError, ImportOutcomeUnknownError } from '../../../src/api/import/import-errors.js';
import type { ImportRunner } from '../../../src/api/import/import-runner.js';
import { startWorker, type RunningWorker } from '../../../src/worker/worker.js';
import { createRedis } from '../../../src/shared/infra/redis.js';
import { encodeImportRows } from '../../../src/shared/import/rows-hand-over.js';
import { ListingRowSchema } from '../../../src/shared/rows/listing-row.js';
import { validListing } from '../../support/fixtures.js';
import { importRunnerOf, listingsImport } from '../../support/import-runner.js';
import { startTestService, type TestAccount, type TestService } from '../../support/test-service.js';

/**
 * A worker's reply is best effort: with none at all (no listener), the runner's poll alone must
 * give every request its outcome, with the job's real result.
 */
describe('ImportRunner when no reply arrives', () => {
  let service: TestService;
  let account: TestAccount;
  let runner: ImportRunner;
  let worker: RunningWorker | undefined;
  const startImportWorker = () => startWorker(service.config, service.deps.log.child({ part: 'worker' }));

  beforeAll(async () => {
    service = await startTestService({ worker: false });
    worker = await startImportWorker();
    account = await service.createAccount();
    runner = importRunnerOf(service, { pickupMs: 5_000, finishMs: 10_000 });
  });
  afterAll(async () => {
    await worker?.close();
    await service?.close();
  });

  const newImport = (rows: string, rowCount: number) => listingsImport(account.id, rows, rowCount);

  it('answers a completed import with its result, found by polling', async () => {
    const rows = [validListing(), validListing()].map((row) => ListingRowSchema.parse(row));
    for (let i = 0; i < 5; i += 1) {
      expect(await runner.run(newImport(encodeImportRows(rows), 2))).toEqual({ inserted: 2, skipped: 0, errors: [] });
    }
  });

  it('never answers from a snapshot of the job read before it finished', async () => {
    // No worker until the runner reads the job; then one starts and the job finishes before the
    // read returns, so that read is a snapshot with no result, whatever the job's state is by
    // the time the runner looks at it.
    await worker!.close();
    worker = undefined;
    const readJob = Job.fromId.bind(Job);
    const spy = vi.spyOn(Job, 'fromId').mockImplementation(async (queue, jobId) => {
      const snapshot = await readJob(queue, jobId);
      worker ??= await startImportWorker();
      for (let i = 0; i < 300; i += 1) {
        const state = await service.deps.queue.getJobState(jobId);
        if (state === 'completed' || state === 'failed') break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      return snapshot;
    });
    try {
      const rows = [ListingRowSchema.parse(validListing())];
      expect(await runner.run(newImport(encodeImportRows(rows), 1))).toEqual({ inserted: 1, skipped: 0, errors: [] });
      expect(spy).toHaveBeenCalled();
    } finally {
      spy.mockRestore();
      worker ??= await startImportWorker();
    }
  });

  it('ends a failed import with ImportNotWrittenError("failed"), found by polling, which the API answers 503 "Import failed; nothing was written"', async () => {
    const error = await runner.run(newImport('[{"title": "no other field"}]', 1)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ImportNotWrittenError);
    expect((error as ImportNotWrittenError).reason).toBe('failed');
    // the import is named (its record says `failed`), so the partner can look it up
    const importId = (error as ImportNotWrittenError).importId;
    expect(importId).toEqual(expect.any(String));
    const reply = importErrorReply(error);
    expect(reply?.statusCode).toBe(503);
    expect(reply?.body).toEqual({ error: 'Import failed; nothing was written', code: 'import_failed', retry_after_sec: 5, import_id: importId });
    expect(reply?.headers).toEqual({ 'retry-after': '5', location: `/v1/api/imports/${importId}` });
  });
});

/**
 * The queue is not the truth: a job that vanished from Redis (a failover that lost it) is
 * answered once its record proves what it wrote, instead of after IMPORT_TIMEOUT_MS.
 */
describe('ImportRunner when its job vanishes from the queue', () => {
  let service: TestService;
  let account: TestAccount;
  let runner: ImportRunner;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
    account = await service.createAccount();
    runner = importRunnerOf(service, { pickupMs: 60_000, finishMs: 60_000 });
  });
  afterAll(async () => {
    await service?.close();
  });

  it('answers ImportNotWrittenError("lost") within seconds, records the import failed, and a worker started later writes nothing', async () => {
    const rows = [ListingRowSchema.parse(validListing())];
    const started = Date.now();
    const outcome = runner.run(listingsImport(account.id, encodeImportRows(rows), 1)).catch((e: unknown) => e);
    await vi.waitFor(async () => expect((await service.deps.queue.getWaiting()).length).toBe(1), { timeout: 5_000 });
    const [job] = await service.deps.queue.getWaiting();
    await job!.remove();

    const error = await outcome;
    expect(error).toBeInstanceOf(ImportNotWrittenError);
    expect((error as ImportNotWrittenError).reason).toBe('lost');
    expect(importErrorReply(error)?.body).toEqual({ error: 'Import failed; nothing was written', code: 'import_failed', retry_after_sec: 5, import_id: (error as ImportNotWrittenError).importId });
    // A sanity bound far below the 60 s timeouts, not a performance check.
    expect(Date.now() - started).toBeLessThan(15_000);
    const [record] = await service.sql<{ state: string }[]>`select state from imports where job_id = ${job!.id!}`;
    expect(record?.state).toBe('failed');

    // The same job brought back (the old master returning) writes nothing.
    await service.deps.queue.add('listings', job!.data, { jobId: job!.id! });
    const worker = await startWorker(service.config, service.deps.log.child({ part: 'late-worker' }));
    try {
      await vi.waitFor(async () => expect(await service.deps.queue.getJobState(job!.id!)).toBe('failed'), { timeout: 10_000 });
    } finally {
      await worker.close();
    }
    const [written] = await service.sql<{ n: number }[]>`select count(*)::int as n from listings where account_id = ${account.id}`;
    expect(written?.n).toBe(0);
  });
});

describe('ImportRunner after an import answered 504', () => {
  let service: TestService;
  let account: TestAccount;

  beforeAll(async () => {
    // No worker: the job stays in the queue, neither finished nor gone.
    service = await startTestService({ worker: false });
    account = await service.createAccount();
  });
  afterAll(async () => {
    await service?.close();
  });

  it('keeps watching the job (settled stays pending) until the runner closes, and then lets go at once', async () => {
    const runner = importRunnerOf(service, { pickupMs: 60_000, finishMs: 300 });
    const rows = encodeImportRows([ListingRowSchema.parse(validListing())]);
    const outcome = runner.run(listingsImport(account.id, rows, 1)).catch((e: unknown) => e);
    await vi.waitFor(async () => expect((await service.deps.queue.getWaiting()).length).toBe(1), { timeout: 5_000 });
    // A worker takes the job (the runner's poll sees it active) and never finishes it.
    const connection = createRedis(service.config, 'blocking');
    const taker = new Worker(service.deps.queue.name, null, { connection, prefix: service.config.redisPrefix, autorun: false });
    const token = randomUUID();
    const job = await taker.getNextJob(token);
    expect(job).toBeDefined();

    const error = await outcome;
    expect(error).toBeInstanceOf(ImportOutcomeUnknownError);
    let settled = false;
    void (error as ImportOutcomeUnknownError).settled.then(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(settled).toBe(false);

    runner.close();
    await vi.waitFor(() => expect(settled).toBe(true), { timeout: 1_000 });
    await job!.moveToFailed(new Error('test over'), token);
    await job!.remove();
    await taker.close();
    await connection.quit();
  });
});
