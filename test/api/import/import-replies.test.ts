import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImportNotWrittenError } from '../../../src/api/import/import-errors.js';
import { ImportReplyListener } from '../../../src/api/import/import-reply-listener.js';
import type { ImportTimeouts } from '../../../src/api/import/import-runner.js';
import type { ImportReply } from '../../../src/shared/import/import-reply.js';
import { encodeImportRows } from '../../../src/shared/import/rows-hand-over.js';
import { ImportRowsStore } from '../../../src/shared/import/rows-store.js';
import { ListingRowSchema } from '../../../src/shared/rows/listing-row.js';
import { startWorker, type RunningWorker } from '../../../src/worker/worker.js';
import { validListing } from '../../support/fixtures.js';
import { importRunnerOf, listingsImport } from '../../support/import-runner.js';
import { startTestService, type TestAccount, type TestService } from '../../support/test-service.js';

/**
 * No poll, and a pickup timeout that a reply must beat: without the reply, the wait ends only
 * after PICKUP_MS (the job withdrawn or found finished, and the answer read from its record).
 */
const PICKUP_MS = 3_000;
const NO_FALLBACK: ImportTimeouts = { pickupMs: PICKUP_MS, finishMs: 3_000, pollIntervalMs: 600_000 };
/** A sanity bound well under PICKUP_MS, not a performance check. */
const BY_REPLY_MS = PICKUP_MS / 2;

/**
 * The worker answers the waiting API processes directly (import-reply.ts), every process on one
 * channel; the poll stays the fallback.
 */
describe('ImportRunner with replies from the worker', () => {
  let service: TestService;
  let account: TestAccount;
  let worker: RunningWorker;
  const closing: { close(): Promise<unknown> }[] = [];

  beforeAll(async () => {
    service = await startTestService({ worker: false });
    worker = await startWorker(service.config, service.deps.log.child({ part: 'worker' }));
    account = await service.createAccount();
  });
  afterAll(async () => {
    for (const client of closing.reverse()) await client.close();
    await worker?.close();
    await service?.close();
  });

  async function listener(): Promise<ImportReplyListener> {
    const replies = new ImportReplyListener(service.config, service.deps.log);
    closing.push(replies);
    await replies.subscribed;
    return replies;
  }

  const newImport = (rows: string, rowCount: number) => listingsImport(account.id, rows, rowCount);
  async function timed(outcome: Promise<unknown>): Promise<{ outcome: unknown; ms: number }> {
    const started = performance.now();
    const settled = await outcome.catch((e: unknown) => e);
    return { outcome: settled, ms: performance.now() - started };
  }
  const twoListings = () => encodeImportRows([validListing(), validListing()].map((row) => ListingRowSchema.parse(row)));

  it('answers from the reply alone, with no poll: the result, and a failure for good', async () => {
    const importRunner = importRunnerOf(service, NO_FALLBACK, await listener());
    for (let i = 0; i < 3; i += 1) {
      const { outcome, ms } = await timed(importRunner.run(newImport(twoListings(), 2)));
      expect(outcome).toEqual({ inserted: 2, skipped: 0, errors: [] });
      expect(ms).toBeLessThan(BY_REPLY_MS);
    }
    const { outcome: error, ms } = await timed(importRunner.run(newImport('[{"title": "no other field"}]', 1)));
    expect(error).toBeInstanceOf(ImportNotWrittenError);
    expect((error as ImportNotWrittenError).reason).toBe('failed');
    expect(ms).toBeLessThan(BY_REPLY_MS);
  });

  it('a reply reaches every API process: one waiting on a job another process added (an Idempotency-Key repeat) is answered by it', async () => {
    const adding = importRunnerOf(service, NO_FALLBACK, await listener());
    const rejoining = importRunnerOf(service, NO_FALLBACK, await listener());
    const importId = randomUUID();
    const rows = twoListings();
    // note: the second add of the same job id changes nothing; both requests wait on the one job.
    const [byAdder, byOther] = await Promise.all([timed(adding.run(newImport(rows, 2), importId)), timed(rejoining.run(newImport(rows, 2), importId))]);
    for (const { outcome, ms } of [byAdder, byOther]) {
      expect(outcome).toEqual({ inserted: 2, skipped: 0, errors: [] });
      expect(ms).toBeLessThan(BY_REPLY_MS);
    }
    const [written] = await service.sql<{ n: number }[]>`select count(*)::int as n from listings where import_job_id = ${importId}`;
    expect(written?.n).toBe(2);
  });

  it('a lost reply (its process stopped listening): the poll ends the wait', async () => {
    const lost = await listener();
    await lost.close();
    const importRunner = importRunnerOf(service, { ...NO_FALLBACK, pollIntervalMs: 200 }, lost);
    const { outcome, ms } = await timed(importRunner.run(newImport(twoListings(), 2)));
    expect(outcome).toEqual({ inserted: 2, skipped: 0, errors: [] });
    expect(ms).toBeLessThan(BY_REPLY_MS);
  });

  it('a job from an API before 0.6.0 (its data names a replyTo) is answered on the one channel all the same', async () => {
    const replies = await listener();
    const heard: ImportReply[] = [];
    replies.onReply((reply) => heard.push(reply));
    const jobId = randomUUID();
    await new ImportRowsStore(service.deps.redis, service.config.redisPrefix).put(jobId, twoListings());
    const { rows: _rows, ...data } = newImport('[]', 2);
    await service.deps.queue.add('listings', { ...data, replyTo: randomUUID() } as never, { jobId });
    await expect.poll(() => heard.find((reply) => reply.jobId === jobId), { timeout: 5_000 }).toEqual({
      jobId,
      state: 'completed',
      result: { inserted: 2, skipped: 0, errors: [] },
    });
  });
});
