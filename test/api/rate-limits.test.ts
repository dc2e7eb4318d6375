import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, validListing } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';

const ANY_NUMBER: unknown = expect.any(Number);

const RATE_HEADERS = [
  'x-ratelimit-limit-minute',
  'x-ratelimit-remaining-minute',
  'x-ratelimit-limit-day',
  'x-ratelimit-remaining-day',
] as const;

type RateHeaders = Record<(typeof RATE_HEADERS)[number], number>;

/** The four X-RateLimit-* headers as numbers; fails the test unless each is a non-negative integer. */
function rateHeaders(res: LightMyRequestResponse): RateHeaders {
  const out = {} as RateHeaders;
  for (const name of RATE_HEADERS) {
    const raw = res.headers[name];
    expect(raw, name).toMatch(/^\d+$/);
    out[name] = Number(raw);
  }
  return out;
}

function retryAfter(res: LightMyRequestResponse): number {
  const raw = res.headers['retry-after'];
  expect(raw).toMatch(/^\d+$/);
  return Number(raw);
}

describe('API-key rate limits', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => {
    await service?.close();
  });

  async function newKey(tier = 'enterprise', scopes = ['listings:write']) {
    const account = await service.createAccount({ tier: 'enterprise' });
    const key = await service.createKey(account, scopes);
    // Keys are created while the account has API access; another tier is set afterwards.
    if (tier !== 'enterprise') await service.sql`update accounts set subscription_tier = ${tier} where id = ${account.id}`;
    return { account, key };
  }

  const me = (key: string) => service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key) });

  /** Sends `count` GET /v1/api/me in parallel batches and returns the status codes. */
  async function spend(key: string, count: number): Promise<number[]> {
    const statuses: number[] = [];
    for (let sent = 0; sent < count; sent += 50) {
      const batch = Math.min(50, count - sent);
      const responses = await Promise.all(Array.from({ length: batch }, () => me(key)));
      statuses.push(...responses.map((r) => r.statusCode));
    }
    return statuses;
  }

  describe('X-RateLimit-* headers', () => {
    const cases: { status: number; send: () => Promise<LightMyRequestResponse> }[] = [
      { status: 200, send: async () => me((await newKey()).key) },
      {
        status: 201,
        send: async () => {
          const { key } = await newKey();
          return service.request({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(key), payload: { listings: [validListing()] } });
        },
      },
      {
        status: 400,
        send: async () => {
          const { key } = await newKey();
          return service.request({
            method: 'POST',
            url: '/v1/api/listings/bulk',
            headers: { ...bearer(key), 'content-type': 'application/json' },
            payload: '{"listings": [',
          });
        },
      },
      {
        status: 403,
        send: async () => {
          const { key } = await newKey('enterprise', ['listings:read']);
          return service.request({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(key), payload: { listings: [validListing()] } });
        },
      },
    ];

    it.each(cases)('are on a $status response, as integers, with the first request counted', async ({ status, send }) => {
      const res = await send();
      expect(res.statusCode).toBe(status);
      expect(rateHeaders(res)).toEqual({
        'x-ratelimit-limit-minute': 300,
        'x-ratelimit-remaining-minute': 299,
        'x-ratelimit-limit-day': 100_000,
        'x-ratelimit-remaining-day': 99_999,
      });
    });

    it.each([
      { tier: 'enterprise', minute: 300, day: 100_000 },
      { tier: 'global', minute: 1_000, day: 500_000 },
    ])('give the $tier limits: $minute per minute, $day per day', async ({ tier, minute, day }) => {
      const { key } = await newKey(tier);
      const headers = rateHeaders(await me(key));
      expect(headers['x-ratelimit-limit-minute']).toBe(minute);
      expect(headers['x-ratelimit-limit-day']).toBe(day);
    });

    it('count down by one per request in both windows', async () => {
      const { key } = await newKey();
      const seen: RateHeaders[] = [];
      for (let i = 0; i < 4; i += 1) seen.push(rateHeaders(await me(key)));
      expect(seen.map((h) => h['x-ratelimit-remaining-minute'])).toEqual([299, 298, 297, 296]);
      expect(seen.map((h) => h['x-ratelimit-remaining-day'])).toEqual([99_999, 99_998, 99_997, 99_996]);
    });
  });

  describe('per-minute limit (Enterprise: 300)', () => {
    let key: string;
    let first300: number[];
    let refused: LightMyRequestResponse;
    let refusedAgain: LightMyRequestResponse;

    beforeAll(async () => {
      ({ key } = await newKey());
      first300 = await spend(key, 300);
      refused = await me(key);
      refusedAgain = await me(key);
    });

    it('allows the first 300 requests of the minute', () => {
      expect(first300).toEqual(Array(300).fill(200));
    });

    it('refuses the 301st with 429, the body of docs/access.md#rate-limits and a matching Retry-After of 1..60 s', () => {
      expect(refused.statusCode).toBe(429);
      const body = refused.json<{ error: string; retry_after_sec: number }>();
      expect(body).toEqual({ error: 'Rate limit exceeded (per-minute)', code: 'rate_limited_minute', retry_after_sec: ANY_NUMBER });
      expect(Number.isInteger(body.retry_after_sec)).toBe(true);
      expect(body.retry_after_sec).toBeGreaterThanOrEqual(1);
      expect(body.retry_after_sec).toBeLessThanOrEqual(60);
      expect(retryAfter(refused)).toBe(body.retry_after_sec);
    });

    it('carries the X-RateLimit-* headers on the 429, remaining-minute at 0 and never negative', () => {
      for (const res of [refused, refusedAgain]) {
        expect(res.statusCode).toBe(429);
        const headers = rateHeaders(res);
        expect(headers['x-ratelimit-limit-minute']).toBe(300);
        expect(headers['x-ratelimit-remaining-minute']).toBe(0);
        expect(headers['x-ratelimit-remaining-day']).toBeGreaterThanOrEqual(0);
      }
    });
  });

  describe('order of checks', () => {
    it('refuses a key without the scope with 429, not 403, once the quota is spent (rate limit before scope)', async () => {
      const { account, key: writeKey } = await newKey();
      const readKey = await service.createKey(account, ['listings:read'], 'read only');
      expect(await spend(writeKey, 300)).toEqual(Array(300).fill(200));
      const res = await service.request({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(readKey), payload: { listings: [validListing()] } });
      expect(res.statusCode).toBe(429);
      expect(res.json()).toMatchObject({ error: 'Rate limit exceeded (per-minute)', code: 'rate_limited_minute' });
    });
  });

  describe('quota per account, shared by its keys', () => {
    it('counts two keys of one account together: 150 + 150, then the 301st on either key is 429', async () => {
      const { account, key: keyA } = await newKey();
      const keyB = await service.createKey(account, ['listings:write'], 'second key');
      expect(await spend(keyA, 150)).toEqual(Array(150).fill(200));
      expect(await spend(keyB, 150)).toEqual(Array(150).fill(200));
      expect((await me(keyA)).statusCode).toBe(429);
      expect((await me(keyB)).statusCode).toBe(429);
    });

    it('leaves another account unaffected when one account is over its limit', async () => {
      const { key: spentKey } = await newKey();
      const { key: otherKey } = await newKey();
      expect(await spend(spentKey, 300)).toEqual(Array(300).fill(200));
      expect((await me(spentKey)).statusCode).toBe(429);

      const res = await me(otherKey);
      expect(res.statusCode).toBe(200);
      expect(rateHeaders(res)['x-ratelimit-remaining-minute']).toBe(299);
    });
  });

  describe('requests that fail after authentication still count', () => {
    it('counts a 403 (key lacking the scope) against the account', async () => {
      const { account, key: writeKey } = await newKey();
      const readKey = await service.createKey(account, ['listings:read'], 'read only');
      const forbidden = await service.request({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(readKey), payload: { listings: [validListing()] } });
      expect(forbidden.statusCode).toBe(403);
      expect(rateHeaders(await me(writeKey))['x-ratelimit-remaining-minute']).toBe(298);
    });

    it('counts a 400 (invalid body) against the account', async () => {
      const { key } = await newKey();
      const bad = await service.request({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(key), payload: { listings: [] } });
      expect(bad.statusCode).toBe(400);
      expect(rateHeaders(await me(key))['x-ratelimit-remaining-minute']).toBe(298);
    });

    it('reaches the 429 with 300 requests that were all 403', async () => {
      const { account, key: writeKey } = await newKey();
      const readKey = await service.createKey(account, ['listings:read'], 'read only');
      const statuses: number[] = [];
      for (let batch = 0; batch < 6; batch += 1) {
        const responses = await Promise.all(
          Array.from({ length: 50 }, () =>
            service.request({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(readKey), payload: { listings: [validListing()] } }),
          ),
        );
        statuses.push(...responses.map((r) => r.statusCode));
      }
      expect(statuses).toEqual(Array(300).fill(403));
      expect((await me(writeKey)).statusCode).toBe(429);
    });
  });

  describe('per-day limit (Enterprise: 100,000)', () => {
    /** rate-limiter-flexible's counter for the account's day window (see src/api/limits/account-quota.ts). */
    const dayKey = (accountId: string) => `${service.config.redisPrefix}:quota-day:${accountId}`;

    /** One real request opens the window; then the stored counter is moved to `used`, keeping its TTL. */
    async function nearlySpentDay(used: number): Promise<string> {
      const { account, key } = await newKey();
      expect((await me(key)).statusCode).toBe(200);
      const redis = service.deps.redis;
      // The counter is a plain integer with the window's TTL; if the storage changes, say so here.
      expect(await redis.get(dayKey(account.id))).toBe('1');
      const ttl = await redis.pttl(dayKey(account.id));
      expect(ttl).toBeGreaterThan(23 * 3600 * 1000);
      expect(ttl).toBeLessThanOrEqual(24 * 3600 * 1000);
      expect(await redis.set(dayKey(account.id), String(used), 'KEEPTTL')).toBe('OK');
      return key;
    }

    it('allows the 100,000th request of the day with remaining-day 0', async () => {
      const key = await nearlySpentDay(99_999);
      const res = await me(key);
      expect(res.statusCode).toBe(200);
      expect(rateHeaders(res)['x-ratelimit-remaining-day']).toBe(0);
    });

    it('refuses the 100,001st with 429 "Rate limit exceeded (per-day)" and a Retry-After to the end of the day window', async () => {
      const key = await nearlySpentDay(100_000);
      const res = await me(key);
      expect(res.statusCode).toBe(429);
      const body = res.json<{ error: string; retry_after_sec: number }>();
      expect(body).toEqual({ error: 'Rate limit exceeded (per-day)', code: 'rate_limited_day', retry_after_sec: ANY_NUMBER });
      expect(retryAfter(res)).toBe(body.retry_after_sec);
      expect(body.retry_after_sec).toBeGreaterThan(23 * 3600);
      expect(body.retry_after_sec).toBeLessThanOrEqual(24 * 3600);
      const headers = rateHeaders(res);
      expect(headers['x-ratelimit-remaining-day']).toBe(0);
      expect(headers['x-ratelimit-limit-day']).toBe(100_000);
    });
  });

  describe('GET /v1/health', () => {
    it('carries no X-RateLimit-* headers', async () => {
      const res = await service.request({ method: 'GET', url: '/v1/health' });
      expect(res.statusCode).toBe(200);
      for (const name of RATE_HEADERS) expect(res.headers[name]).toBeUndefined();
    });

    it('is not rate limited: more than a minute\'s Global quota of calls all answer 200', async () => {
      const statuses: number[] = [];
      for (let batch = 0; batch < 11; batch += 1) {
        const responses = await Promise.all(Array.from({ length: 100 }, () => service.request({ method: 'GET', url: '/v1/health' })));
        statuses.push(...responses.map((r) => r.statusCode));
      }
      expect(statuses).toEqual(Array(1_100).fill(200));
    });
  });
});
