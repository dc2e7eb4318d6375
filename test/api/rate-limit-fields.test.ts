import type { LightMyRequestResponse } from 'fastify';
import { parseList } from 'structured-headers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, validListing, validMachine } from '../support/fixtures.js';
import { startTestService, type TestService, type TestAccount } from '../support/test-service.js';

/** A field's members as `[policy name, parameters]`, in the order sent. */
type Members = [string, Record<string, number>][];

/**
 * One structured field (RFC 9651) as a list of policies. Fails the test unless every member is an
 * Item whose bare item is a String (not a Token, not an Inner List) and whose parameters are Integers.
 */
function parseField(res: LightMyRequestResponse, name: 'ratelimit' | 'ratelimit-policy'): Members {
  const raw = res.headers[name];
  expect(typeof raw, `${name} is sent once, as text`).toBe('string');
  return parseList(raw as string).map(([value, parameters]) => {
    expect(typeof value, `${name}: each member is an item whose value is a String`).toBe('string');
    const params = Object.fromEntries(parameters);
    for (const [key, param] of Object.entries(params)) expect(Number.isInteger(param), `${name}: ${key}=${String(param)} is an Integer`).toBe(true);
    return [value as string, params as Record<string, number>];
  });
}

/** `r` and `t` of the RateLimit field, by policy; fails unless it names exactly "minute" then "day", each with r and t. */
function serviceLimits(res: LightMyRequestResponse): Record<'minute' | 'day', { r: number; t: number }> {
  const members = parseField(res, 'ratelimit');
  expect(members.map(([name, params]) => [name, Object.keys(params).sort()])).toEqual([
    ['minute', ['r', 't']],
    ['day', ['r', 't']],
  ]);
  const [minute, day] = members.map(([, params]) => ({ r: params['r']!, t: params['t']! }));
  return { minute: minute!, day: day! };
}

const integerHeader = (res: LightMyRequestResponse, name: string): number => {
  expect(res.headers[name], name).toMatch(/^\d+$/);
  return Number(res.headers[name]);
};

describe('RateLimit-Policy and RateLimit on API-key responses', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => {
    await service?.close();
  });

  async function newKey(tier = 'enterprise', scopes = ['listings:write']): Promise<{ account: TestAccount; key: string }> {
    const account = await service.createAccount({ tier });
    return { account, key: await service.createKey(account, scopes) };
  }

  const me = (key: string) => service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key) });

  /** Sends `count` GET /v1/api/me in parallel batches and returns the status codes. */
  async function spend(key: string, count: number): Promise<number[]> {
    const statuses: number[] = [];
    for (let sent = 0; sent < count; sent += 50) {
      const responses = await Promise.all(Array.from({ length: Math.min(50, count - sent) }, () => me(key)));
      statuses.push(...responses.map((r) => r.statusCode));
    }
    return statuses;
  }

  /** rate-limiter-flexible's counter of the account's `window` (see src/api/limits/account-quota.ts). */
  const counterKey = (window: 'minute' | 'day', accountId: string) => `${service.config.redisPrefix}:quota-${window}:${accountId}`;

  /** Moves a window's stored counter to `used`, keeping its TTL (the window must be open). */
  async function setUsed(window: 'minute' | 'day', accountId: string, used: number): Promise<void> {
    const redis = service.deps.redis;
    // The counter is a plain integer with the window's TTL; if the storage changes, say so here.
    expect(await redis.get(counterKey(window, accountId))).toMatch(/^\d+$/);
    expect(await redis.pttl(counterKey(window, accountId))).toBeGreaterThan(0);
    expect(await redis.set(counterKey(window, accountId), String(used), 'KEEPTTL')).toBe('OK');
  }

  describe('RateLimit-Policy', () => {
    it.each([
      { tier: 'enterprise', minute: 300, day: 100_000 },
      { tier: 'global', minute: 1_000, day: 500_000 },
    ])('names the policies "minute" and "day" with the $tier quotas: q=$minute;w=60 and q=$day;w=86400', async ({ tier, minute, day }) => {
      const { key } = await newKey(tier);
      const res = await me(key);
      expect(res.statusCode).toBe(200);
      expect(parseField(res, 'ratelimit-policy')).toEqual([
        ['minute', { q: minute, w: 60 }],
        ['day', { q: day, w: 86_400 }],
      ]);
      expect(integerHeader(res, 'x-ratelimit-limit-minute')).toBe(minute);
      expect(integerHeader(res, 'x-ratelimit-limit-day')).toBe(day);
    });
  });

  describe('RateLimit', () => {
    it('gives as r the X-RateLimit-Remaining-* values, one less per request in both windows', async () => {
      const { key } = await newKey();
      const seen: { minute: number; day: number }[] = [];
      for (let i = 0; i < 3; i += 1) {
        const res = await me(key);
        const { minute, day } = serviceLimits(res);
        expect(minute.r).toBe(integerHeader(res, 'x-ratelimit-remaining-minute'));
        expect(day.r).toBe(integerHeader(res, 'x-ratelimit-remaining-day'));
        seen.push({ minute: minute.r, day: day.r });
      }
      expect(seen).toEqual([
        { minute: 299, day: 99_999 },
        { minute: 298, day: 99_998 },
        { minute: 297, day: 99_997 },
      ]);
    });

    it('gives as t the seconds left in each window: 1..60 for the minute, 1..86400 for the day, not growing within the window', async () => {
      const { key } = await newKey();
      const first = serviceLimits(await me(key));
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const second = serviceLimits(await me(key));
      for (const limits of [first, second]) {
        expect(limits.minute.t).toBeGreaterThanOrEqual(1);
        expect(limits.minute.t).toBeLessThanOrEqual(60);
        expect(limits.day.t).toBeGreaterThanOrEqual(1);
        expect(limits.day.t).toBeLessThanOrEqual(86_400);
      }
      // The windows opened with the first request, so their ends are about a minute and a day away.
      expect(first.minute.t).toBeGreaterThanOrEqual(59);
      expect(first.day.t).toBeGreaterThan(86_400 - 60);
      expect(second.minute.t).toBeLessThan(first.minute.t);
      expect(second.day.t).toBeLessThan(first.day.t);
    });
  });

  describe('on every answer once the key is known', () => {
    const listings = '/v1/api/listings/bulk';
    const machines = '/v1/api/machines/bulk';
    const cases: { what: string; status: number; send: (key: string) => Promise<LightMyRequestResponse>; scopes?: string[] }[] = [
      { what: 'GET /v1/api/me', status: 200, send: (key) => me(key) },
      {
        what: 'a listings import',
        status: 201,
        send: (key) => service.request({ method: 'POST', url: listings, headers: bearer(key), payload: { listings: [validListing()] } }),
      },
      {
        what: 'a machines import',
        status: 201,
        send: (key) => service.request({ method: 'POST', url: machines, headers: bearer(key), payload: { machines: [validMachine()] } }),
      },
      {
        what: 'an invalid body',
        status: 400,
        send: (key) => service.request({ method: 'POST', url: listings, headers: bearer(key), payload: { listings: [] } }),
      },
      {
        what: 'a key without the scope',
        status: 403,
        scopes: ['listings:read'],
        send: (key) => service.request({ method: 'POST', url: listings, headers: bearer(key), payload: { listings: [validListing()] } }),
      },
      {
        what: 'a body over the limit',
        status: 413,
        send: (key) =>
          service.request({
            method: 'POST',
            url: machines,
            headers: { ...bearer(key), 'content-type': 'application/json' },
            payload: `"${'x'.repeat(1_048_577)}"`,
          }),
      },
    ];

    it.each(cases)('are on a $status ($what), with the numbers of the X-RateLimit-* headers', async ({ status, send, scopes }) => {
      const { key } = await newKey('enterprise', scopes);
      const res = await send(key);
      expect(res.statusCode).toBe(status);
      expect(parseField(res, 'ratelimit-policy')).toEqual([
        ['minute', { q: 300, w: 60 }],
        ['day', { q: 100_000, w: 86_400 }],
      ]);
      const { minute, day } = serviceLimits(res);
      expect({ minute: minute.r, day: day.r }).toEqual({ minute: 299, day: 99_999 });
      expect(minute.r).toBe(integerHeader(res, 'x-ratelimit-remaining-minute'));
      expect(day.r).toBe(integerHeader(res, 'x-ratelimit-remaining-day'));
    });
  });

  describe('on a 429 for a spent window', () => {
    it('gives the spent minute r=0 and a Retry-After equal to its t (1..60), the same as retry_after_sec', async () => {
      const { key } = await newKey();
      expect(await spend(key, 300)).toEqual(Array(300).fill(200));
      for (const refused of [await me(key), await me(key)]) {
        expect(refused.statusCode).toBe(429);
        expect(refused.json()).toMatchObject({ error: 'Rate limit exceeded (per-minute)', code: 'rate_limited_minute' });
        expect(parseField(refused, 'ratelimit-policy')).toEqual([
          ['minute', { q: 300, w: 60 }],
          ['day', { q: 100_000, w: 86_400 }],
        ]);
        const { minute, day } = serviceLimits(refused);
        expect(minute.r).toBe(0);
        expect(minute.t).toBeGreaterThanOrEqual(1);
        expect(minute.t).toBeLessThanOrEqual(60);
        expect(day.r).toBe(integerHeader(refused, 'x-ratelimit-remaining-day'));
        const retryAfter = integerHeader(refused, 'retry-after');
        expect(retryAfter).toBeGreaterThanOrEqual(minute.t);
        expect(retryAfter).toBe(minute.t);
        expect(refused.json<{ retry_after_sec: number }>().retry_after_sec).toBe(retryAfter);
      }
    });

    it('gives the spent day r=0 and a Retry-After equal to its t', async () => {
      const { account, key } = await newKey();
      expect((await me(key)).statusCode).toBe(200);
      await setUsed('day', account.id, 100_000);
      const refused = await me(key);
      expect(refused.statusCode).toBe(429);
      expect(refused.json()).toMatchObject({ error: 'Rate limit exceeded (per-day)', code: 'rate_limited_day' });
      const { minute, day } = serviceLimits(refused);
      expect(day.r).toBe(0);
      expect(day.t).toBeGreaterThan(23 * 3600);
      expect(day.t).toBeLessThanOrEqual(86_400);
      expect(minute.r).toBe(298);
      expect(integerHeader(refused, 'retry-after')).toBe(day.t);
    });

    it('waits for the later window when both are spent: a minute refusal with the day spent too retries after the day\'s t', async () => {
      const { account, key } = await newKey();
      expect((await me(key)).statusCode).toBe(200);
      await setUsed('minute', account.id, 300);
      await setUsed('day', account.id, 100_000);
      const refused = await me(key);
      expect(refused.statusCode).toBe(429);
      expect(refused.json()).toMatchObject({ error: 'Rate limit exceeded (per-minute)', code: 'rate_limited_minute' });
      const { minute, day } = serviceLimits(refused);
      expect([minute.r, day.r]).toEqual([0, 0]);
      const retryAfter = integerHeader(refused, 'retry-after');
      expect(retryAfter).toBeGreaterThanOrEqual(minute.t);
      expect(retryAfter).toBe(day.t);
      expect(refused.json<{ retry_after_sec: number }>().retry_after_sec).toBe(retryAfter);
    });
  });

  describe('not sent', () => {
    const absent = (res: LightMyRequestResponse) => Object.keys(res.headers).filter((name) => /^(x-)?ratelimit/i.test(name));

    it('on key management (session token): list, create, revoke', async () => {
      const account = await service.createAccount();
      const session = bearer(account.sessionToken);
      const created = await service.request({ method: 'POST', url: '/v1/api/keys', headers: session, payload: { label: 'fields', scopes: ['listings_write'] } });
      expect(created.statusCode).toBe(201);
      const listed = await service.request({ method: 'GET', url: '/v1/api/keys', headers: session });
      expect(listed.statusCode).toBe(200);
      const id = created.json<{ metadata: { id: string } }>().metadata.id;
      const revoked = await service.request({ method: 'DELETE', url: `/v1/api/keys/${id}`, headers: session });
      expect(revoked.statusCode).toBe(200);
      for (const res of [created, listed, revoked]) expect(absent(res)).toEqual([]);
    });

    it('on GET /v1/health', async () => {
      const res = await service.request({ method: 'GET', url: '/v1/health' });
      expect(res.statusCode).toBe(200);
      expect(absent(res)).toEqual([]);
    });

    it('on a 401, where no key is known', async () => {
      const res = await service.request({ method: 'GET', url: '/v1/api/me', remoteAddress: '203.0.113.77' });
      expect(res.statusCode).toBe(401);
      expect(absent(res)).toEqual([]);
    });
  });

  describe('GET /v1/openapi.json', () => {
    interface Doc {
      paths: Record<string, Record<string, { responses: Record<string, { headers?: Record<string, unknown> }> }>>;
      components: { headers: Record<string, { required?: boolean; description?: string; schema: { type?: string; examples?: string[] } }> };
    }

    it('declares RateLimit-Policy and RateLimit wherever it declares X-RateLimit-Remaining-Minute, and just as required', async () => {
      const doc = (await service.request({ method: 'GET', url: '/v1/openapi.json' })).json<Doc>();
      let declared = 0;
      for (const [path, item] of Object.entries(doc.paths)) {
        for (const [method, operation] of Object.entries(item)) {
          for (const [status, response] of Object.entries(operation.responses)) {
            const headers = response.headers ?? {};
            const where = `${method} ${path} ${status}`;
            const legacy = headers['X-RateLimit-Remaining-Minute'];
            if (legacy === undefined) {
              expect(headers['RateLimit'], where).toBeUndefined();
              expect(headers['RateLimit-Policy'], where).toBeUndefined();
              continue;
            }
            declared += 1;
            // Always sent: a reference to the required component; sometimes sent: declared in place.
            for (const name of ['RateLimit', 'RateLimit-Policy']) {
              expect(headers[name], `${where} ${name}`).toEqual(
                '$ref' in (legacy as object) ? { $ref: `#/components/headers/${name}` } : expect.objectContaining({ schema: expect.any(Object) }),
              );
            }
          }
        }
      }
      expect(declared).toBeGreaterThan(10);
      expect(doc.paths['/v1/api/me']!['get']!.responses['200']!.headers).toMatchObject({
        RateLimit: { $ref: '#/components/headers/RateLimit' },
        'RateLimit-Policy': { $ref: '#/components/headers/RateLimit-Policy' },
      });
      for (const name of ['RateLimit', 'RateLimit-Policy']) {
        const header = doc.components.headers[name]!;
        expect(header).toMatchObject({ required: true, description: expect.stringContaining('draft-ietf-httpapi-ratelimit-headers-10') });
        expect(header.schema.type).toBe('string');
        // Each example is a field value a structured-field parser accepts.
        expect(header.schema.examples?.length).toBeGreaterThan(0);
        for (const example of header.schema.examples ?? []) expect(parseList(example).length).toBe(2);
      }
    });
  });
});
