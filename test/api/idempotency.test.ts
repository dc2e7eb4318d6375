import { randomUUID } from 'node:crypto';
import { Job, QueueEvents, type Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LARGE_FROM_BYTES } from '../../src/api/import/import-preparer.js';
import { IMPORT_QUEUE_NAME, createImportQueue } from '../../src/shared/import/import-queue.js';
import { ImportRowsStore } from '../../src/shared/import/rows-store.js';
import { createRedis, type RedisClient } from '../../src/shared/infra/redis.js';
import { startWorker, type RunningWorker } from '../../src/worker/worker.js';
import { bearer, validListing, validMachine } from '../support/fixtures.js';
import { keysMatching, testRedisEnv } from '../support/test-redis.js';
import { startTestService, withLateWorker, type TestAccount, type TestService } from '../support/test-service.js';
import { newPartner, postBulk, storedFor } from '../support/bulk-endpoint.js';
import { rowError } from '../support/row-errors.js';

const LISTINGS = '/v1/api/listings/bulk';
const MACHINES = '/v1/api/machines/bulk';
const REPLAYED = 'idempotent-replayed';
const INVALID_KEY_BODY = { error: 'Idempotency-Key must be 1 to 255 printable ASCII characters', code: 'invalid_idempotency_key' };
const MISMATCH_BODY = { error: 'Idempotency-Key was already used with a different request body', code: 'idempotency_key_reused' };

async function jobsIn(queue: Queue): Promise<number> {
  return Object.values(await queue.getJobCounts()).reduce((sum, n) => sum + n, 0);
}

function twoListings(): { listings: object[] } {
  return { listings: [validListing(), validListing({ currency: 'EUR' }), validListing()] };
}

describe('POST /v1/api/listings/bulk and /v1/api/machines/bulk with an Idempotency-Key', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => {
    await service?.close();
  });

  describe('replay', () => {
    it('replays the first 201 and its body with Idempotent-Replayed: true, and inserts once', async () => {
      const { account, key } = await newPartner(service);
      const body = twoListings();

      const first = await postBulk(service, 'listings', key, body, 'order-2024-0001');
      const repeat = await postBulk(service, 'listings', key, body, 'order-2024-0001');

      expect(first.statusCode).toBe(201);
      expect(first.json()).toEqual({ inserted: 2, skipped: 1, errors: [rowError(1, 'currency: must be exactly USD', 'not_allowed')], import_id: expect.any(String) });
      expect(first.headers[REPLAYED]).toBeUndefined();
      expect(repeat.statusCode).toBe(201);
      expect(repeat.json()).toEqual(first.json());
      expect(repeat.headers[REPLAYED]).toBe('true');
      expect(await storedFor(service, account)).toEqual({ listings: 2, machines: 0, imports: 1, idempotencyKeys: 1 });
    });

    it('replays a large body, read on a worker thread, and refuses another large body under the same key', async () => {
      const { account, key } = await newPartner(service);
      const large = (description: string) => ({ listings: Array.from({ length: 150 }, () => validListing({ description: description.repeat(4_000) })) });
      expect(Buffer.byteLength(JSON.stringify(large('a')))).toBeGreaterThan(LARGE_FROM_BYTES);

      const body = large('a');
      const first = await postBulk(service, 'listings', key, body, 'large-1');
      const repeat = await postBulk(service, 'listings', key, body, 'large-1');
      const other = await postBulk(service, 'listings', key, large('b'), 'large-1');

      expect(first.statusCode).toBe(201);
      expect(first.json()).toEqual({ inserted: 150, skipped: 0, errors: [], import_id: expect.any(String) });
      expect(repeat.statusCode).toBe(201);
      expect(repeat.headers[REPLAYED]).toBe('true');
      expect(other.statusCode).toBe(422);
      expect(other.json()).toEqual(MISMATCH_BODY);
      expect(await storedFor(service, account)).toEqual({ listings: 150, machines: 0, imports: 1, idempotencyKeys: 1 });
    });

    it('replays on the machines endpoint too', async () => {
      const { account, key } = await newPartner(service);
      const body = { machines: [validMachine(), validMachine({ model: ' ' })] };

      const first = await postBulk(service, 'machines', key, body, 'machines-run-7');
      const repeat = await postBulk(service, 'machines', key, body, 'machines-run-7');

      expect(first.statusCode).toBe(201);
      expect(first.headers[REPLAYED]).toBeUndefined();
      expect(repeat.statusCode).toBe(201);
      expect(repeat.headers[REPLAYED]).toBe('true');
      expect(repeat.json()).toEqual(first.json());
      expect(await storedFor(service, account)).toEqual({ listings: 0, machines: 1, imports: 1, idempotencyKeys: 1 });
    });

    it('replays a third and fourth repeat the same way', async () => {
      const { account, key } = await newPartner(service);
      const body = twoListings();
      const first = await postBulk(service, 'listings', key, body, 'again-and-again');

      for (let i = 0; i < 3; i += 1) {
        const repeat = await postBulk(service, 'listings', key, body, 'again-and-again');
        expect(repeat.statusCode).toBe(201);
        expect(repeat.headers[REPLAYED]).toBe('true');
        expect(repeat.body).toBe(first.body);
      }
      expect(await storedFor(service, account)).toMatchObject({ listings: 2, imports: 1 });
    });

    it('runs two requests with different keys as two imports', async () => {
      const { account, key } = await newPartner(service);
      const body = twoListings();

      const one = await postBulk(service, 'listings', key, body, 'key-one');
      const two = await postBulk(service, 'listings', key, body, 'key-two');

      expect(one.statusCode).toBe(201);
      expect(two.statusCode).toBe(201);
      expect(two.headers[REPLAYED]).toBeUndefined();
      expect(await storedFor(service, account)).toEqual({ listings: 4, machines: 0, imports: 2, idempotencyKeys: 2 });
    });

    it('replays to another key of the same account (the key string is scoped to the account, not the API key)', async () => {
      const { account, key } = await newPartner(service);
      const secondKey = await service.createKey(account);
      const body = twoListings();

      const first = await postBulk(service, 'listings', key, body, 'shared-by-keys');
      const repeat = await postBulk(service, 'listings', secondKey, body, 'shared-by-keys');

      expect(repeat.statusCode).toBe(201);
      expect(repeat.headers[REPLAYED]).toBe('true');
      expect(repeat.json()).toEqual(first.json());
      expect(await storedFor(service, account)).toMatchObject({ listings: 2, imports: 1 });
    });
  });

  describe('same key, different request', () => {
    it('answers 422 for another body and inserts nothing', async () => {
      const { account, key } = await newPartner(service);
      const first = await postBulk(service, 'listings', key, twoListings(), 'reused');
      expect(first.statusCode).toBe(201);

      const other = await postBulk(service, 'listings', key, { listings: [validListing({ title: 'Something else' })] }, 'reused');

      expect(other.statusCode).toBe(422);
      expect(other.json()).toEqual(MISMATCH_BODY);
      expect(other.headers[REPLAYED]).toBeUndefined();
      expect(await storedFor(service, account)).toEqual({ listings: 2, machines: 0, imports: 1, idempotencyKeys: 1 });
    });

    it('keeps replaying the first body after a refused mismatch', async () => {
      const { key } = await newPartner(service);
      const body = twoListings();
      const first = await postBulk(service, 'listings', key, body, 'still-mine');
      await postBulk(service, 'listings', key, { listings: [validListing()] }, 'still-mine');

      const repeat = await postBulk(service, 'listings', key, body, 'still-mine');

      expect(repeat.statusCode).toBe(201);
      expect(repeat.headers[REPLAYED]).toBe('true');
      expect(repeat.json()).toEqual(first.json());
    });

    it('answers 422 for the same key on the machines endpoint after listings, and inserts no machine', async () => {
      const { account, key } = await newPartner(service);
      const first = await postBulk(service, 'listings', key, twoListings(), 'cross-endpoint');
      expect(first.statusCode).toBe(201);

      const machines = await postBulk(service, 'machines', key, { machines: [validMachine()] }, 'cross-endpoint');

      expect(machines.statusCode).toBe(422);
      expect(machines.json()).toEqual(MISMATCH_BODY);
      expect(await storedFor(service, account)).toEqual({ listings: 2, machines: 0, imports: 1, idempotencyKeys: 1 });
    });

    it('answers 422 when the very same body text goes to the other endpoint under the same key', async () => {
      const { account, key } = await newPartner(service);
      // Each endpoint reads only its own array, so this one body is valid on both.
      const body = { listings: [validListing()], machines: [validMachine()] };
      const first = await postBulk(service, 'machines', key, body, 'cross-endpoint-2');
      expect(first.statusCode).toBe(201);

      const listings = await postBulk(service, 'listings', key, body, 'cross-endpoint-2');

      expect(listings.statusCode).toBe(422);
      expect(listings.json()).toEqual(MISMATCH_BODY);
      expect(await storedFor(service, account)).toEqual({ listings: 0, machines: 1, imports: 1, idempotencyKeys: 1 });
    });
  });

  describe('scope', () => {
    it("gives account B using account A's key string its own fresh import", async () => {
      const a = await newPartner(service);
      const b = await newPartner(service);
      const body = twoListings();

      const first = await postBulk(service, 'listings', a.key, body, 'same-string-two-accounts');
      const other = await postBulk(service, 'listings', b.key, body, 'same-string-two-accounts');

      expect(first.statusCode).toBe(201);
      expect(other.statusCode).toBe(201);
      expect(other.headers[REPLAYED]).toBeUndefined();
      const { import_id: firstId, ...firstCounts } = first.json<{ import_id: string }>();
      const { import_id: freshId, ...freshCounts } = other.json<{ import_id: string }>();
      expect(freshCounts).toEqual(firstCounts);
      expect(freshId).not.toBe(firstId);
      expect(await storedFor(service, a.account)).toEqual({ listings: 2, machines: 0, imports: 1, idempotencyKeys: 1 });
      expect(await storedFor(service, b.account)).toEqual({ listings: 2, machines: 0, imports: 1, idempotencyKeys: 1 });
    });

    it("gives account B a fresh import with its own body, not a 422, when A used the key string with another body", async () => {
      const a = await newPartner(service);
      const b = await newPartner(service);
      await postBulk(service, 'listings', a.key, twoListings(), 'b-does-not-see-a');

      const other = await postBulk(service, 'listings', b.key, { listings: [validListing()] }, 'b-does-not-see-a');

      expect(other.statusCode).toBe(201);
      expect(other.json()).toEqual({ inserted: 1, skipped: 0, errors: [], import_id: expect.any(String) });
      expect(await storedFor(service, b.account)).toMatchObject({ listings: 1, imports: 1 });
    });
  });

  describe('concurrent repeats', () => {
    it('answers 10 parallel requests with one key all 201 with identical bodies and inserts the rows once', async () => {
      const { account, key } = await newPartner(service);
      const body = twoListings();

      const replies = await Promise.all(Array.from({ length: 10 }, () => postBulk(service, 'listings', key, body, 'parallel-10')));

      expect(replies.map((r) => r.statusCode)).toEqual(Array(10).fill(201));
      expect(new Set(replies.map((r) => r.body)).size).toBe(1);
      expect(replies[0]!.json()).toEqual({ inserted: 2, skipped: 1, errors: [rowError(1, 'currency: must be exactly USD', 'not_allowed')], import_id: expect.any(String) });
      expect(await storedFor(service, account)).toEqual({ listings: 2, machines: 0, imports: 1, idempotencyKeys: 1 });
    });

    it('marks every one of 10 parallel replies but the one that ran as replayed', async () => {
      const { account, key } = await newPartner(service);
      const body = twoListings();

      const replies = await Promise.all(Array.from({ length: 10 }, () => postBulk(service, 'listings', key, body, 'parallel-headers')));

      expect(replies.map((r) => r.statusCode)).toEqual(Array(10).fill(201));
      expect(replies.map((r) => r.headers[REPLAYED] ?? 'absent').sort()).toEqual(['absent', ...Array(9).fill('true')]);
      expect(await storedFor(service, account)).toMatchObject({ listings: 2, imports: 1 });
    });
  });

  describe('refused requests store nothing', () => {
    it('lets a request that got 400 (no valid rows) be retried with the same key, which then inserts', async () => {
      const { account, key } = await newPartner(service);

      const refused = await postBulk(service, 'listings', key, { listings: [validListing({ currency: 'EUR' })] }, 'fix-and-retry');
      expect(refused.statusCode).toBe(400);
      expect(refused.json()).toMatchObject({ error: 'no valid rows', code: 'no_valid_rows' });
      expect(await storedFor(service, account)).toEqual({ listings: 0, machines: 0, imports: 0, idempotencyKeys: 0 });

      const retry = await postBulk(service, 'listings', key, { listings: [validListing()] }, 'fix-and-retry');

      expect(retry.statusCode).toBe(201);
      expect(retry.json()).toEqual({ inserted: 1, skipped: 0, errors: [], import_id: expect.any(String) });
      expect(retry.headers[REPLAYED]).toBeUndefined();
      expect(await storedFor(service, account)).toEqual({ listings: 1, machines: 0, imports: 1, idempotencyKeys: 1 });
    });

    it.each([
      ['an empty array', { listings: [] }],
      ['a body without the listings array', { machines: [validMachine()] }],
      ['201 rows', { listings: Array.from({ length: 201 }, () => validListing()) }],
    ])('stores no key for a 400 on %s', async (_name, body) => {
      const { account, key } = await newPartner(service);

      const refused = await postBulk(service, 'listings', key, body, 'refused-400');

      expect(refused.statusCode).toBe(400);
      expect(await storedFor(service, account)).toEqual({ listings: 0, machines: 0, imports: 0, idempotencyKeys: 0 });
    });

    it('stores no key for invalid JSON', async () => {
      const { account, key } = await newPartner(service);

      const refused = await service.request({
        method: 'POST',
        url: LISTINGS,
        headers: { ...bearer(key), 'content-type': 'application/json', 'idempotency-key': 'broken-json' },
        payload: '{"listings": [',
      });

      expect(refused.statusCode).toBe(400);
      expect(await storedFor(service, account)).toEqual({ listings: 0, machines: 0, imports: 0, idempotencyKeys: 0 });
    });

    it('stores no key for a 413', async () => {
      const { account, key } = await newPartner(service);
      const body = JSON.stringify({ machines: [{ ...validMachine(), padding: 'x'.repeat(1_048_576) }] });

      const refused = await service.request({
        method: 'POST',
        url: MACHINES,
        headers: { ...bearer(key), 'content-type': 'application/json', 'idempotency-key': 'too-large' },
        payload: body,
      });

      expect(refused.statusCode).toBe(413);
      expect(await storedFor(service, account)).toEqual({ listings: 0, machines: 0, imports: 0, idempotencyKeys: 0 });
    });
  });

  describe('header validation', () => {
    it.each([
      ['an empty string', ''],
      ['256 characters', 'k'.repeat(256)],
      ['a non-ASCII character', 'caf\u00e9-order'],
      ['an emoji', 'order-\u{1F409}'],
      ['a tab', 'order\t1'],
      ['a control character (U+0001)', 'order\u00011'],
      ['DEL (U+007F)', 'order\u007f1'],
    ])('answers 400 for %s and writes nothing', async (_name, value) => {
      const { account, key } = await newPartner(service);

      const res = await postBulk(service, 'listings', key, twoListings(), value);

      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual(INVALID_KEY_BODY);
      expect(await storedFor(service, account)).toEqual({ listings: 0, machines: 0, imports: 0, idempotencyKeys: 0 });
    });

    it('answers 400 on the machines endpoint too', async () => {
      const { account, key } = await newPartner(service);

      const res = await postBulk(service, 'machines', key, { machines: [validMachine()] }, 'x'.repeat(300));

      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual(INVALID_KEY_BODY);
      expect(await storedFor(service, account)).toEqual({ listings: 0, machines: 0, imports: 0, idempotencyKeys: 0 });
    });

    it.each([
      ['1 character', '7'],
      ['255 characters', 'k'.repeat(255)],
      ['every printable ASCII character', Array.from({ length: 95 }, (_, i) => String.fromCharCode(0x20 + i)).join('')],
      ['a UUID', randomUUID()],
    ])('accepts a key of %s, and replays it', async (_name, value) => {
      const { account, key } = await newPartner(service);
      const body = twoListings();

      const first = await postBulk(service, 'listings', key, body, value);
      const repeat = await postBulk(service, 'listings', key, body, value);

      expect(first.statusCode).toBe(201);
      expect(repeat.statusCode).toBe(201);
      expect(repeat.headers[REPLAYED]).toBe('true');
      expect(await storedFor(service, account)).toEqual({ listings: 2, machines: 0, imports: 1, idempotencyKeys: 1 });
    });
  });

  describe('24-hour retention', () => {
    async function ageKey(account: TestAccount, idempotencyKey: string, hours: number): Promise<void> {
      const updated = await service.sql`
        update idempotency_keys set created_at = now() - make_interval(hours => ${hours})
        where account_id = ${account.id} and idempotency_key = ${idempotencyKey}`;
      expect(updated.count).toBe(1);
    }

    it('treats a key used more than 24 hours ago as new: inserts again, no replay header', async () => {
      const { account, key } = await newPartner(service);
      const body = twoListings();
      const first = await postBulk(service, 'listings', key, body, 'yesterday');
      expect(first.statusCode).toBe(201);
      await ageKey(account, 'yesterday', 25);

      const again = await postBulk(service, 'listings', key, body, 'yesterday');

      expect(again.statusCode).toBe(201);
      expect(again.headers[REPLAYED]).toBeUndefined();
      const { import_id: firstId, ...firstCounts } = first.json<{ import_id: string }>();
      const { import_id: freshId, ...freshCounts } = again.json<{ import_id: string }>();
      expect(freshCounts).toEqual(firstCounts);
      expect(freshId).not.toBe(firstId);
      expect(await storedFor(service, account)).toEqual({ listings: 4, machines: 0, imports: 2, idempotencyKeys: 1 });
    });

    it('accepts another body under a key used more than 24 hours ago', async () => {
      const { account, key } = await newPartner(service);
      await postBulk(service, 'listings', key, twoListings(), 'reuse-after-expiry');
      await ageKey(account, 'reuse-after-expiry', 25);

      const other = await postBulk(service, 'listings', key, { listings: [validListing()] }, 'reuse-after-expiry');

      expect(other.statusCode).toBe(201);
      expect(other.json()).toEqual({ inserted: 1, skipped: 0, errors: [], import_id: expect.any(String) });
      expect(await storedFor(service, account)).toMatchObject({ listings: 3, imports: 2 });
    });

    it('still replays a key used 23 hours ago', async () => {
      const { account, key } = await newPartner(service);
      const body = twoListings();
      await postBulk(service, 'listings', key, body, 'earlier-today');
      await ageKey(account, 'earlier-today', 23);

      const repeat = await postBulk(service, 'listings', key, body, 'earlier-today');

      expect(repeat.statusCode).toBe(201);
      expect(repeat.headers[REPLAYED]).toBe('true');
      expect(await storedFor(service, account)).toMatchObject({ listings: 2, imports: 1 });
    });
  });
});

describe('POST /v1/api/listings/bulk: a repeat while the first request is still running', () => {
  let service: TestService;
  let queue: Queue;
  let eventsConnection: RedisClient;
  let events: QueueEvents;
  let worker: RunningWorker | undefined;

  beforeAll(async () => {
    // No worker yet: the first request's job stays in the queue until the test starts one.
    service = await startTestService({ worker: false });
    queue = createImportQueue(service.config, service.deps.redis);
    eventsConnection = createRedis(service.config, 'blocking');
    events = new QueueEvents(IMPORT_QUEUE_NAME, { connection: eventsConnection, prefix: service.config.redisPrefix });
    await events.waitUntilReady();
  });
  afterAll(async () => {
    await worker?.close();
    await events?.close();
    eventsConnection?.disconnect();
    await queue?.close();
    await service?.close();
  });

  it('waits for the first run and replies with its result; both 201 with identical bodies, rows once', async () => {
    const { account, key } = await newPartner(service);
    const body = twoListings();

    const first = postBulk(service, 'listings', key, body, 'slow-first');
    await vi.waitFor(async () => expect((await queue.getJobCounts('waiting')).waiting).toBe(1), { timeout: 5_000, interval: 20 });
    const [jobId] = (await queue.getWaiting()).map((job) => job.id);
    // The repeat re-adds the waiting job under the same id; BullMQ reports that as 'duplicated',
    // which shows the repeat has joined the first run before any worker exists.
    const duplicated = new Promise<void>((resolve) => {
      events.on('duplicated', (args) => args.jobId === jobId && resolve());
    });
    const repeat = postBulk(service, 'listings', key, body, 'slow-first');
    await duplicated;
    expect(await storedFor(service, account)).toEqual({ listings: 0, machines: 0, imports: 0, idempotencyKeys: 1 });

    worker = await startWorker(service.config, service.deps.log.child({ part: 'late-worker' }));
    const [firstReply, repeatReply] = await Promise.all([first, repeat]);

    expect(firstReply.statusCode).toBe(201);
    expect(repeatReply.statusCode).toBe(201);
    expect(repeatReply.json()).toEqual(firstReply.json());
    expect(firstReply.json()).toEqual({ inserted: 2, skipped: 1, errors: [rowError(1, 'currency: must be exactly USD', 'not_allowed')], import_id: expect.any(String) });
    expect(firstReply.headers[REPLAYED]).toBeUndefined();
    expect(repeatReply.headers[REPLAYED]).toBe('true');
    expect(await storedFor(service, account)).toEqual({ listings: 2, machines: 0, imports: 1, idempotencyKeys: 1 });
  });
});

describe('POST /v1/api/listings/bulk: a repeat that cannot reach Redis while the first request runs', () => {
  let service: TestService;

  beforeAll(async () => {
    // No worker: the first request's job waits in the queue.
    service = await startTestService({ worker: false });
  });
  afterAll(async () => {
    await service?.close();
  });

  it('answers 504, never the 503 that says nothing was written, since the first request may yet write; a later retry gets the rows once', async () => {
    const { account, key } = await newPartner(service);
    const body = twoListings();
    const first = postBulk(service, 'listings', key, body, 'repeat-without-redis');
    await vi.waitFor(async () => expect((await service.deps.queue.getJobCounts('waiting')).waiting).toBe(1), { timeout: 5_000, interval: 20 });

    // The repeat's look at the first request's job fails as a Redis failover makes it fail.
    // note: every look fails while the repeat runs, not only the next: the first request's own
    // poll of its job (every 500 ms, its failures only logged) can come first, and a repeat that
    // starts the preparing threads (the first request, alone, was prepared inline) takes long
    // enough for it to (a CI run answered 503 after the pickup timeout).
    const lookup = vi.spyOn(Job, 'fromId').mockRejectedValue(new Error('Connection is closed.'));
    let repeat;
    try {
      repeat = await postBulk(service, 'listings', key, body, 'repeat-without-redis');
    } finally {
      lookup.mockRestore();
    }
    expect(repeat.statusCode).toBe(504);
    expect(repeat.json()).toEqual({ error: 'Import is still running; check before retrying', code: 'import_still_running', request_id: expect.any(String), import_id: expect.any(String) });

    const [firstReply, retry] = await withLateWorker(service, async () => [await first, await postBulk(service, 'listings', key, body, 'repeat-without-redis')]);
    expect(firstReply.statusCode).toBe(201);
    expect(retry.statusCode).toBe(201);
    expect(await storedFor(service, account)).toEqual({ listings: 2, machines: 0, imports: 1, idempotencyKeys: 1 });
  });
});

describe('POST /v1/api/listings/bulk when no worker picks the job up (IMPORT_PICKUP_TIMEOUT_MS=500)', () => {
  let service: TestService;
  let queue: Queue;

  beforeAll(async () => {
    service = await startTestService({ worker: false, env: { IMPORT_PICKUP_TIMEOUT_MS: '500' } });
    queue = createImportQueue(service.config, service.deps.redis);
  });
  afterAll(async () => {
    await queue?.close();
    await service?.close();
  });

  const withWorker = <T>(fn: () => Promise<T>): Promise<T> => withLateWorker(service, fn);

  it('answers 503 with Retry-After: 30 and leaves no job, and no rows, in the queue', async () => {
    const { account, key } = await newPartner(service);
    const jobsBefore = await jobsIn(queue);

    const res = await postBulk(service, 'listings', key, twoListings());

    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ error: 'Import workers unavailable; nothing was written', code: 'workers_unavailable', retry_after_sec: 30, import_id: expect.any(String) });
    expect(res.headers['retry-after']).toBe('30');
    expect(await jobsIn(queue)).toBe(jobsBefore);
    expect(await keysMatching(service.deps.redis, `${service.config.redisPrefix}:import-rows:*`)).toEqual([]);
    expect(await storedFor(service, account)).toEqual({ listings: 0, machines: 0, imports: 0, idempotencyKeys: 0 });
  });

  it('never writes the withdrawn import, also after a worker starts', async () => {
    const { account, key } = await newPartner(service);
    const jobsBefore = await jobsIn(queue);
    const res = await postBulk(service, 'listings', key, twoListings(), 'withdrawn');
    expect(res.statusCode).toBe(503);

    await withWorker(async () => {
      // A withdrawn job that ran anyway would be written within this time.
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    });

    expect(await jobsIn(queue)).toBe(jobsBefore);
    expect(await storedFor(service, account)).toMatchObject({ listings: 0, machines: 0, imports: 0 });
  });

  it('runs a retry with the same Idempotency-Key after the 503 once a worker runs: 201, rows once', async () => {
    const { account, key } = await newPartner(service);
    const body = twoListings();
    const refused = await postBulk(service, 'listings', key, body, 'retry-after-503');
    expect(refused.statusCode).toBe(503);

    const retry = await withWorker(() => postBulk(service, 'listings', key, body, 'retry-after-503'));

    expect(retry.statusCode).toBe(201);
    expect(retry.json()).toEqual({ inserted: 2, skipped: 1, errors: [rowError(1, 'currency: must be exactly USD', 'not_allowed')], import_id: expect.any(String) });
    expect(await storedFor(service, account)).toEqual({ listings: 2, machines: 0, imports: 1, idempotencyKeys: 1 });
  });

  it('never writes a job answered 503 that a rejoining retry brings back, and the next retry writes the rows once', async () => {
    const { account, key } = await newPartner(service);
    const body = twoListings();
    // note: the spies only watch what the first request hands the queue, to bring it back as a
    // retry that rejoined the same job would: the same id, the same data and rows.
    const added = vi.spyOn(service.deps.queue, 'add');
    const stored = vi.spyOn(ImportRowsStore.prototype, 'put');
    let refused;
    let firstJob;
    try {
      refused = await postBulk(service, 'listings', key, body, 'rejoined-after-503');
      const [name, data, options] = added.mock.calls[0]!;
      const [jobId, rows] = stored.mock.calls[0]!;
      firstJob = { name, data, jobId, rows };
      expect(options?.jobId).toBe(jobId);
    } finally {
      added.mockRestore();
      stored.mockRestore();
    }
    expect(refused.statusCode).toBe(503);
    const { name, data, jobId, rows } = firstJob;
    await new ImportRowsStore(service.deps.redis, service.config.redisPrefix).put(jobId, rows);
    await service.deps.queue.add(name, data, { jobId });

    const retry = await withWorker(async () => {
      await vi.waitFor(async () => expect(await service.deps.queue.getJobState(jobId)).toBe('failed'), { timeout: 10_000 });
      return postBulk(service, 'listings', key, body, 'rejoined-after-503');
    });

    expect(retry.statusCode).toBe(201);
    expect(await storedFor(service, account)).toEqual({ listings: 2, machines: 0, imports: 1, idempotencyKeys: 1 });
  });

  const oneServer = 'REDIS_URL' in testRedisEnv();

  // note: on one server the rows and the job leave together, and BullMQ reports a closed
  // connection without saying whether its command left.
  it.runIf(oneServer)('answers 504 and keeps the key claimed when adding the job failed after it may have left (it may yet run); a retry runs that same job: rows once', async () => {
    const { account, key } = await newPartner(service);
    const body = twoListings();
    // The queue's connection is closed under the add, as in a Redis failover.
    const producer = service.deps.queue.opts.connection as RedisClient;
    producer.disconnect();
    const unknown = await postBulk(service, 'listings', key, body, 'add-failed');
    await producer.connect();
    expect(unknown.statusCode).toBe(504);
    expect(unknown.json()).toEqual({ error: 'Import is still running; check before retrying', code: 'import_still_running', request_id: expect.any(String), import_id: expect.any(String) });
    const [claim] = await service.sql<{ job_id: string }[]>`select job_id from idempotency_keys where account_id = ${account.id}`;
    expect(claim).toBeDefined();

    const retry = await withWorker(() => postBulk(service, 'listings', key, body, 'add-failed'));

    expect(retry.statusCode).toBe(201);
    expect(await storedFor(service, account)).toEqual({ listings: 2, machines: 0, imports: 1, idempotencyKeys: 1 });
    const [written] = await service.sql<{ job_id: string }[]>`select job_id from imports where account_id = ${account.id}`;
    expect(written?.job_id).toBe(claim!.job_id);
  });

  // note: drives one server's connection; a cluster client has one per node.
  it.runIf(oneServer)('answers 503 "nothing written" and releases the key when the job never left (the connection was down), so a retry runs afresh', async () => {
    const { account, key } = await newPartner(service);
    const body = twoListings();
    const producer = service.deps.queue.opts.connection as Redis;
    const retryStrategy = producer.options.retryStrategy;
    // note: the connection drops and stays down for a while: commands are refused unsent.
    producer.options.retryStrategy = () => 3_000;
    producer.stream.destroy();
    try {
      await vi.waitFor(() => expect(producer.status).toBe('reconnecting'));
      const refused = await postBulk(service, 'listings', key, body, 'never-sent');
      expect(refused.statusCode).toBe(503);
      expect(refused.json()).toEqual({ error: 'Service temporarily unavailable', code: 'service_unavailable', retry_after_sec: 5 });
      expect(refused.headers['retry-after']).toBe('5');
      expect(await storedFor(service, account)).toMatchObject({ imports: 0, idempotencyKeys: 0 });
    } finally {
      producer.options.retryStrategy = retryStrategy;
    }
    await vi.waitFor(() => expect(producer.status).toBe('ready'), { timeout: 10_000 });

    const retry = await withWorker(() => postBulk(service, 'listings', key, body, 'never-sent'));

    expect(retry.statusCode).toBe(201);
    expect(await storedFor(service, account)).toEqual({ listings: 2, machines: 0, imports: 1, idempotencyKeys: 1 });
  });

  // note: on a cluster the job is added only once its rows are stored, so a closed connection
  // stops the import before the job can leave.
  it.runIf(!oneServer)('on a cluster, answers 503 "nothing written" and releases the key when the rows could not be stored', async () => {
    const { account, key } = await newPartner(service);
    const body = twoListings();
    const producer = service.deps.queue.opts.connection as RedisClient;
    producer.disconnect();
    const refused = await postBulk(service, 'listings', key, body, 'rows-not-stored');
    await producer.connect();
    expect(refused.statusCode).toBe(503);
    expect(refused.json()).toEqual({ error: 'Service temporarily unavailable', code: 'service_unavailable', retry_after_sec: 5 });
    expect(await storedFor(service, account)).toMatchObject({ imports: 0, idempotencyKeys: 0 });

    const retry = await withWorker(() => postBulk(service, 'listings', key, body, 'rows-not-stored'));

    expect(retry.statusCode).toBe(201);
    expect(await storedFor(service, account)).toEqual({ listings: 2, machines: 0, imports: 1, idempotencyKeys: 1 });
  });

  it('answers 503 on the machines endpoint too', async () => {
    const { account, key } = await newPartner(service);
    // note: earlier tests' finished jobs stay in Redis for a while; none may be added here.
    const jobsBefore = await jobsIn(queue);

    const res = await postBulk(service, 'machines', key, { machines: [validMachine()] }, randomUUID());

    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ error: 'Import workers unavailable; nothing was written', code: 'workers_unavailable', retry_after_sec: 30, import_id: expect.any(String) });
    expect(res.headers['retry-after']).toBe('30');
    expect(await jobsIn(queue)).toBe(jobsBefore);
    expect(await storedFor(service, account)).toMatchObject({ machines: 0, imports: 0 });
  });
});
