import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountInFlight } from '../../src/api/limits/in-flight-slots.js';
import { createLogger } from '../../src/shared/infra/logger.js';
import { loadConfig } from '../../src/shared/infra/config.js';
import { bearer, validListing } from '../support/fixtures.js';
import { holdImports } from '../support/hold-imports.js';
import { rawRequest, requestHead } from '../support/raw-http.js';
import { testRedisPrefix } from '../support/test-database.js';
import { testRedisClient } from '../support/test-redis.js';
import { startTestService, withLateWorker, type ApiReplica, type TestService } from '../support/test-service.js';

const TOO_MANY = { error: 'Too many concurrent requests', code: 'too_many_concurrent_requests', retry_after_sec: 1 };
const silentLog = createLogger(loadConfig({ LOG_LEVEL: 'silent' }), 'test');

describe('AccountInFlight (slots in Redis)', () => {
  const redis = testRedisClient();
  afterAll(() => redis.disconnect());

  it('gives at most `max` slots per account, and one back for each release', async () => {
    const slots = new AccountInFlight(redis, testRedisPrefix(), 2, silentLog);
    try {
      const [a, b, c] = [await slots.tryAcquire('acct-1'), await slots.tryAcquire('acct-1'), await slots.tryAcquire('acct-1')];
      expect([a !== undefined, b !== undefined, c]).toEqual([true, true, undefined]);
      expect(await slots.tryAcquire('acct-2')).toBeDefined();
      a!.release();
      a!.release();
      await expect.poll(async () => (await slots.tryAcquire('acct-1')) !== undefined, { timeout: 2_000 }).toBe(true);
      expect(await slots.tryAcquire('acct-1')).toBeUndefined();
    } finally {
      slots.close();
    }
  });

  it('releases a slot held past maxHoldMs, whatever its holder does, and says so in the log', async () => {
    const chunks: string[] = [];
    const log = createLogger(loadConfig({ LOG_LEVEL: 'info' }), 'test', { write: (line: string) => void chunks.push(line) });
    const slots = new AccountInFlight(redis, testRedisPrefix(), 1, log, { leaseMs: 60_000, renewEveryMs: 100, maxHoldMs: 300 });
    try {
      // A holder that never releases its slot, as a request whose end was lost track of.
      expect(await slots.tryAcquire('acct')).toBeDefined();
      expect(await slots.tryAcquire('acct')).toBeUndefined();
      await expect.poll(async () => (await slots.tryAcquire('acct')) !== undefined, { timeout: 3_000, interval: 100 }).toBe(true);
      expect(chunks.join('')).toContain('an in-flight slot outlived any import it could belong to; released');
    } finally {
      slots.close();
    }
  });

  it('frees the slots of a replica that died when their leases end, and keeps those of a live one', async () => {
    const prefix = testRedisPrefix();
    const options = { leaseMs: 600, renewEveryMs: 150 };
    const dead = new AccountInFlight(redis, prefix, 2, silentLog, options);
    const live = new AccountInFlight(redis, prefix, 2, silentLog, options);
    try {
      expect(await dead.tryAcquire('acct')).toBeDefined();
      dead.close(); // stops renewing, as a killed process would
      expect(await live.tryAcquire('acct')).toBeDefined();
      expect(await live.tryAcquire('acct')).toBeUndefined();
      // Past the dead slot's lease, the live one is still renewed: one free slot.
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      expect(await live.tryAcquire('acct')).toBeDefined();
      expect(await live.tryAcquire('acct')).toBeUndefined();
    } finally {
      dead.close();
      live.close();
    }
  });
});

describe('POST /v1/api/*/bulk with ACCOUNT_MAX_IN_FLIGHT=2', () => {
  let service: TestService;
  let replica: ApiReplica;
  let port: number;

  beforeAll(async () => {
    // No worker: imports wait in the queue, holding their slots, until a test starts one.
    service = await startTestService({ worker: false, env: { ACCOUNT_MAX_IN_FLIGHT: '2', IMPORT_PICKUP_TIMEOUT_MS: '20000' } });
    replica = await service.startReplica();
    await service.app.listen({ port: 0, host: '127.0.0.1' });
    port = (service.app.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await replica?.close();
    await service?.close();
  });

  const listings = (key: string, on: Pick<TestService, 'request'> = service) =>
    on.request({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(key), payload: { listings: [validListing()] } });

  const withWorker = <T>(fn: () => Promise<T>): Promise<T> => withLateWorker(service, fn);

  it('answers the third concurrent import of an account, on either replica, 429 "Too many concurrent requests" with Retry-After: 1, counted against the quota', async () => {
    const account = await service.createAccount();
    const key = await service.createKey(account);
    const running = [listings(key), listings(key, replica)];
    await expect.poll(async () => (await service.deps.queue.getJobCounts('waiting')).waiting, { timeout: 5_000 }).toBeGreaterThanOrEqual(2);

    for (const api of [service, replica]) {
      const refused = await listings(key, api);
      expect(refused.statusCode).toBe(429);
      expect(refused.json()).toEqual(TOO_MANY);
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.headers['x-ratelimit-remaining-minute']).toBeDefined();
    }
    const me = await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key) });
    // 2 running + 2 refused + this one
    expect(me.headers['x-ratelimit-remaining-minute']).toBe(String(300 - 5));

    // Another account is not held back.
    const other = await service.createAccount();
    const otherKey = await service.createKey(other);
    const othersImport = listings(otherKey);

    const done = await withWorker(() => Promise.all([...running, othersImport]));
    expect(done.map((r) => r.statusCode)).toEqual([201, 201, 201]);
    // The slots came back with the replies.
    expect((await withWorker(() => listings(key))).statusCode).toBe(201);
  });

  it('holds dry runs to the same cap: two dry runs in flight make the third request of the account a 429, import or dry run', async () => {
    const account = await service.createAccount();
    const key = await service.createKey(account);
    const dryRun = () => service.request({ method: 'POST', url: '/v1/api/listings/bulk?dry_run=true', headers: bearer(key), payload: { listings: [validListing()] } });
    const running = [dryRun(), dryRun()];
    await expect.poll(async () => (await service.deps.queue.getJobCounts('waiting')).waiting, { timeout: 5_000 }).toBeGreaterThanOrEqual(2);

    for (const refused of [await dryRun(), await listings(key)]) {
      expect(refused.statusCode).toBe(429);
      expect(refused.json()).toEqual(TOO_MANY);
    }
    const done = await withWorker(() => Promise.all(running));
    expect(done.map((r) => r.statusCode)).toEqual([200, 200]);
    expect((await withWorker(() => dryRun())).statusCode).toBe(200);
  });

  it('refuses before the body is read: the 429 comes while the body is still on its way, and the connection closes', async () => {
    const account = await service.createAccount();
    const key = await service.createKey(account);
    const running = [listings(key), listings(key)];
    await expect.poll(async () => (await service.deps.queue.getJobCounts('waiting')).waiting, { timeout: 5_000 }).toBeGreaterThanOrEqual(2);

    const reply = await rawRequest(port, {
      text: requestHead('POST', '/v1/api/listings/bulk', { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, 1_000_000),
      trickle: ['{"listings":['],
      waitMs: 5_000,
    });
    expect(reply.status).toBe(429);
    expect(JSON.parse(reply.body)).toEqual(TOO_MANY);
    expect(reply.closedAfterMs).toBeDefined();
    await withWorker(() => Promise.all(running));
  });

  it('gives the slot back when the client hangs up while its key is checked or its slot taken: twenty hang-ups, then an import is 201', async () => {
    const account = await service.createAccount();
    const key = await service.createKey(account);
    const head = requestHead('POST', '/v1/api/listings/bulk', { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, 1_000);
    // Each client sends its headers and closes at once, as a client-side timeout or a proxy giving up does.
    const hangUps = Array.from({ length: 20 }, () =>
      new Promise<void>((resolve) => {
        const socket = connect(port, '127.0.0.1', () => socket.end(head));
        socket.on('close', () => resolve());
        socket.on('error', () => resolve());
        socket.resume();
      }),
    );
    await Promise.all(hangUps);
    // note: the slots of the hang-ups are released when their requests end; give them a moment.
    await expect
      .poll(async () => (await service.deps.redis.zcard(`${service.config.redisPrefix}:in-flight:${account.id}`)), { timeout: 5_000 })
      .toBe(0);
    expect((await withWorker(() => listings(key))).statusCode).toBe(201);
  });

  it('gives the slot back when the request is refused after taking it (invalid body)', async () => {
    const account = await service.createAccount();
    const key = await service.createKey(account);
    for (let i = 0; i < 5; i += 1) {
      const res = await service.request({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(key), payload: { listings: [] } });
      expect(res.statusCode).toBe(400);
    }
    expect((await withWorker(() => listings(key))).statusCode).toBe(201);
  });
});

describe('POST /v1/api/listings/bulk answered 504 (ACCOUNT_MAX_IN_FLIGHT=1, IMPORT_TIMEOUT_MS=500)', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ env: { ACCOUNT_MAX_IN_FLIGHT: '1', IMPORT_TIMEOUT_MS: '500' } });
  });
  afterAll(async () => {
    await service?.close();
  });

  const listings = (key: string) =>
    service.request({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(key), payload: { listings: [validListing()] } });

  it('keeps the slot while the import it answered 504 still runs, and gives it back when the job ends', async () => {
    const account = await service.createAccount();
    const key = await service.createKey(account);
    const hold = await holdImports(service.sql);
    let released = false;
    try {
      const timedOut = await listings(key);
      expect(timedOut.statusCode).toBe(504);
      // The job is still in the worker's hands: the account's one slot is still taken.
      const refused = await listings(key);
      expect(refused.statusCode).toBe(429);
      expect(refused.json()).toEqual(TOO_MANY);
      await hold.release();
      released = true;
    } finally {
      if (!released) await hold.release();
    }
    // Once the job has ended (written), the slot comes back.
    await expect.poll(async () => (await listings(key)).statusCode, { timeout: 10_000, interval: 200 }).toBe(201);
    const [{ count } = { count: -1 }] = await service.sql<{ count: number }[]>`select count(*)::int as count from listings where account_id = ${account.id}`;
    expect(count).toBe(2);
  });
});
