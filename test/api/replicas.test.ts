import { randomUUID } from 'node:crypto';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_LEASE } from '../../src/api/limits/quota-leases.js';
import { bearer, validListing } from '../support/fixtures.js';
import { startTestService, type ApiReplica, type TestService } from '../support/test-service.js';

/**
 * What two API replicas on one database and one Redis must share: the quota windows, a
 * revocation, and an Idempotency-Key's result. The main suite runs this on one Redis server and
 * `npm run test:cluster` on a Redis Cluster.
 */
describe('two API replicas', () => {
  let service: TestService;
  let replica: ApiReplica;

  beforeAll(async () => {
    service = await startTestService();
    replica = await service.startReplica();
  });
  afterAll(async () => {
    await replica?.close();
    await service?.close();
  });

  const onEither = (i: number, options: InjectOptions) => (i % 2 === 0 ? service.request(options) : replica.request(options));

  it('count one per-minute window together: of 330 concurrent requests split over both, never more than 300 pass, and at most one share fewer', async () => {
    const account = await service.createAccount({ tier: 'enterprise' });
    const key = await service.createKey(account);
    const replies = await Promise.all(
      Array.from({ length: 330 }, (_, i) => onEither(i, { method: 'GET', url: '/v1/api/me', headers: bearer(key) })),
    );
    const statuses = replies.map((r) => r.statusCode);
    const passed = statuses.filter((s) => s === 200).length;
    expect(passed).toBeLessThanOrEqual(300);
    // note: a replica may hold a share of the window it was not sent the requests to spend
    // (docs/access.md#how-the-quota-is-counted-across-replicas)
    expect(passed).toBeGreaterThanOrEqual(300 - MAX_LEASE);
    expect(statuses.filter((s) => s === 429)).toHaveLength(330 - passed);
    const refused = replies.find((r) => r.statusCode === 429)!;
    expect(refused.json()).toMatchObject({ error: 'Rate limit exceeded (per-minute)', code: 'rate_limited_minute' });
    // Both replicas see the same day window: the requests that passed. The requests refused by
    // the minute window (these too) and a share not spent are given back to it, off the request
    // path, so it settles there.
    await expect
      .poll(async () => {
        const next = await replica.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key) });
        return [next.statusCode, next.headers['x-ratelimit-remaining-day']];
      }, { timeout: 4_000, interval: 100 })
      .toEqual([429, String(100_000 - passed)]);
  });

  it('refuse a key revoked through one replica on the very next request to the other', async () => {
    const account = await service.createAccount();
    const key = await service.createKey(account);
    // Both replicas have the key cached.
    for (let i = 0; i < 2; i += 1) {
      expect((await onEither(i, { method: 'GET', url: '/v1/api/me', headers: bearer(key) })).statusCode).toBe(200);
    }
    const list = await replica.request({ method: 'GET', url: '/v1/api/keys', headers: bearer(account.sessionToken) });
    const id = list.json<{ keys: { id: string }[] }>().keys[0]!.id;
    const revoked = await replica.request({ method: 'DELETE', url: `/v1/api/keys/${id}`, headers: bearer(account.sessionToken) });
    expect(revoked.statusCode).toBe(200);
    const next = await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key) });
    expect(next.statusCode).toBe(401);
    expect(next.json()).toEqual({ error: 'Invalid API key', code: 'invalid_api_key' });
  });

  it('replay an import sent with an Idempotency-Key to one replica when the retry reaches the other, writing its rows once', async () => {
    const account = await service.createAccount();
    const key = await service.createKey(account);
    const request = {
      method: 'POST' as const,
      url: '/v1/api/listings/bulk',
      headers: { ...bearer(key), 'idempotency-key': randomUUID() },
      payload: { listings: [validListing(), validListing()] },
    };
    const first = await service.request(request);
    expect(first.statusCode).toBe(201);
    const retry = await replica.request(request);
    expect(retry.statusCode).toBe(201);
    expect(retry.json()).toEqual(first.json());
    expect(retry.headers['idempotent-replayed']).toBe('true');
    const [stored] = await service.sql<{ n: number }[]>`select count(*)::int as n from listings where account_id = ${account.id}`;
    expect(stored?.n).toBe(2);
  });
});
