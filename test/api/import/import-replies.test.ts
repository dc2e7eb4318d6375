import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { QueueEvents } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImportNotWrittenError } from '../../../src/api/import/import-errors.js';
import { ImportReplyListener } from '../../../src/api/import/import-reply-listener.js';
import { ImportRunner, type ImportTimeouts } from '../../../src/api/import/import-runner.js';
import type { ImportReply } from '../../../src/shared/import/import-reply.js';
import { IMPORT_QUEUE_NAME, type NewImport } from '../../../src/shared/import/import-queue.js';
import { RowsHandOver, encodeImportRows } from '../../../src/shared/import/rows-hand-over.js';
import { ImportRowsStore } from '../../../src/shared/import/rows-store.js';
import { createRedis } from '../../../src/shared/infra/redis.js';
import { ListingRowSchema } from '../../../src/shared/rows/listing-row.js';
import { startWorker, type RunningWorker } from '../../../src/worker/worker.js';
import { validListing } from '../../support/fixtures.js';
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
 * The worker answers the waiting API process directly (import-reply.ts); the queue's event and
 * the poll stay the fallback, and a reply reaches only the process that added the job.
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

  function runner(replies: ImportReplyListener | undefined, events: QueueEvents, timeouts: ImportTimeouts): ImportRunner {
    const rowsStore = new ImportRowsStore(service.deps.redis, service.config.redisPrefix);
    return new ImportRunner(service.deps.sql, service.deps.queue, rowsStore, events, timeouts, service.deps.log, replies);
  }

  async function queueEvents(): Promise<QueueEvents> {
    const connection = createRedis(service.config, 'blocking');
    const events = new QueueEvents(IMPORT_QUEUE_NAME, { connection, prefix: service.config.redisPrefix });
    closing.push({ close: async () => (await events.close(), connection.disconnect()) });
    await events.waitUntilReady();
    return events;
  }

  const silentEvents = () => new EventEmitter() as unknown as QueueEvents;

  function newImport(rows: string, rowCount: number): NewImport {
    return { kind: 'listings', accountId: account.id, requestId: randomUUID(), total: rowCount, errors: [], rowCount, rows: new RowsHandOver(rows) };
  }
  async function timed(outcome: Promise<unknown>): Promise<{ outcome: unknown; ms: number }> {
    const started = performance.now();
    const settled = await outcome.catch((e: unknown) => e);
    return { outcome: settled, ms: performance.now() - started };
  }
  const twoListings = () => encodeImportRows([validListing(), validListing()].map((row) => ListingRowSchema.parse(row)));

  it('answers from the reply alone, with no queue event and no poll: the result, and a failure for good', async () => {
    const importRunner = runner(await listener(), silentEvents(), NO_FALLBACK);
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

  it('a reply goes only to the process that added the job: another process takes nothing', async () => {
    const mine = await listener();
    const other = await listener();
    const heardByOther: ImportReply[] = [];
    other.onReply((reply) => heardByOther.push(reply));
    expect(other.replyTo).not.toBe(mine.replyTo);

    const { outcome, ms } = await timed(runner(mine, silentEvents(), NO_FALLBACK).run(newImport(twoListings(), 2)));
    expect(outcome).toEqual({ inserted: 2, skipped: 0, errors: [] });
    expect(ms).toBeLessThan(BY_REPLY_MS);
    // note: a moment for a reply to the other process to arrive, had one been sent.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(heardByOther).toEqual([]);
  });

  it('a lost reply (its process stopped listening): the queue event ends the wait', async () => {
    const lost = await listener();
    await lost.close();
    const events = await queueEvents();

    const { outcome, ms } = await timed(runner(lost, events, NO_FALLBACK).run(newImport(twoListings(), 2)));
    expect(outcome).toEqual({ inserted: 2, skipped: 0, errors: [] });
    expect(ms).toBeLessThan(BY_REPLY_MS);
  });

  it('a lost reply and no queue event: the poll ends the wait', async () => {
    const lost = await listener();
    await lost.close();
    const importRunner = runner(lost, silentEvents(), { ...NO_FALLBACK, pollIntervalMs: 200 });
    const { outcome, ms } = await timed(importRunner.run(newImport(twoListings(), 2)));
    expect(outcome).toEqual({ inserted: 2, skipped: 0, errors: [] });
    expect(ms).toBeLessThan(BY_REPLY_MS);
  });

  it('a job from an older API (no replyTo) is still answered, by the queue event', async () => {
    const events = await queueEvents();
    const { outcome, ms } = await timed(runner(undefined, events, NO_FALLBACK).run(newImport(twoListings(), 2)));
    expect(outcome).toEqual({ inserted: 2, skipped: 0, errors: [] });
    expect(ms).toBeLessThan(BY_REPLY_MS);
  });
});
