import { randomBytes } from 'node:crypto';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, validListing } from '../support/fixtures.js';
import { startTestService, type TestAccount, type TestService } from '../support/test-service.js';

const ROUTES = [
  { method: 'GET', url: '/v1/api/me' },
  { method: 'POST', url: '/v1/api/listings/bulk' },
] as const;

const MALFORMED = { error: 'Missing or malformed API key', code: 'missing_api_key' };
const INVALID = { error: 'Invalid API key', code: 'invalid_api_key' };
const LISTINGS_BODY_LIMIT = 2_097_152;

function hex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

/** A key in the documented format that was never issued. */
function unknownKey(): string {
  return `svc_live_${hex(4)}_${hex(16)}`;
}

let ipCounter = 0;
/**
 * Each rejected request comes from its own address: this file produces far more than 20 401s,
 * and the IP lockout (tested in lockout.test.ts) must not turn later expectations into 429s.
 */
function freshIp(): string {
  ipCounter += 1;
  return `198.18.${Math.floor(ipCounter / 250)}.${(ipCounter % 250) + 1}`;
}

function routeRequest(
  route: (typeof ROUTES)[number],
  headers: Record<string, string>,
  extra: Partial<InjectOptions> = {},
): InjectOptions {
  const body = route.method === 'POST' ? { payload: { listings: [validListing()] } } : {};
  return { method: route.method, url: route.url, headers, remoteAddress: freshIp(), ...body, ...extra };
}

describe('API-key authentication (GET /v1/api/me, POST /v1/api/listings/bulk)', () => {
  let service: TestService;
  let account: TestAccount;
  let writeKey: string;

  beforeAll(async () => {
    service = await startTestService();
    account = await service.createAccount({ tier: 'enterprise' });
    writeKey = await service.createKey(account, ['listings:write']);
  });
  afterAll(async () => {
    await service?.close();
  });

  /** As `admin accounts set-tier` does: the database, then the auth version the API checks. */
  async function setTier(accountId: string, tier: string): Promise<void> {
    await service.sql`update accounts set subscription_tier = ${tier} where id = ${accountId}`;
    await service.deps.authVersion.bump();
  }

  describe('missing or malformed key', () => {
    const wellFormed = unknownKey();
    const cases: { name: string; headers: Record<string, string> }[] = [
      { name: 'no Authorization header', headers: {} },
      { name: '"Bearer" without a token', headers: { authorization: 'Bearer' } },
      { name: 'a Basic credential', headers: { authorization: 'Basic xyz' } },
      { name: 'a key with uppercase hex', headers: bearer('svc_live_ABCDEF12_0123456789ABCDEF0123456789ABCDEF') },
      { name: 'a key with a 31-character secret', headers: bearer(wellFormed.slice(0, -1)) },
      { name: 'a key with a 7-character prefix', headers: bearer(`svc_live_${hex(4).slice(1)}_${hex(16)}`) },
      { name: 'a key with another prefix', headers: bearer(wellFormed.replace('svc_live_', 'svc_test_')) },
    ];
    const table = ROUTES.flatMap((route) => cases.map((c) => ({ ...c, route, label: `${route.method} ${route.url}` })));

    it.each(table)('$label with $name -> 401 "Missing or malformed API key"', async ({ route, headers }) => {
      const res = await service.request(routeRequest(route, headers));
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual(MALFORMED);
    });
  });

  describe('unknown or revoked key', () => {
    it.each(ROUTES)('$method $url with a well-formed unknown key -> 401 "Invalid API key"', async (route) => {
      const res = await service.request(routeRequest(route, bearer(unknownKey())));
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual(INVALID);
    });

    it('refuses a revoked key with 401 "Invalid API key" on the very next request', async () => {
      const key = await service.createKey(account, ['listings:write'], 'to revoke');
      expect((await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key) })).statusCode).toBe(200);
      const listed = await service.request({ method: 'GET', url: '/v1/api/keys', headers: bearer(account.sessionToken) });
      const record = listed.json<{ keys: { id: string; key_prefix: string }[] }>().keys.find((k) => k.key_prefix === key.slice(9, 17));
      expect(record).toBeDefined();
      const revoked = await service.request({ method: 'DELETE', url: `/v1/api/keys/${record!.id}`, headers: bearer(account.sessionToken) });
      expect(revoked.statusCode).toBe(200);

      const res = await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key), remoteAddress: freshIp() });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual(INVALID);
    });
  });

  describe('subscription tier (402)', () => {
    let proAccount: TestAccount;
    let proKey: string;
    const paywall = {
      error: 'API access requires an Enterprise or Global subscription',
      code: 'subscription_required',
      current_tier: 'pro',
      upgrade_url: 'https://example.test/upgrade',
    };

    beforeAll(async () => {
      // Keys can only be created while the account has API access; the downgrade comes after.
      proAccount = await service.createAccount({ tier: 'enterprise' });
      proKey = await service.createKey(proAccount, ['listings:write']);
      await setTier(proAccount.id, 'pro');
    });

    it('answers a pro account\'s valid key on GET /v1/api/me with 402 and the body of docs/access.md#tiers', async () => {
      const res = await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(proKey) });
      expect(res.statusCode).toBe(402);
      expect(res.json()).toEqual(paywall);
    });

    it('answers 402 on a bulk route before looking at an invalid body', async () => {
      const res = await service.request({
        method: 'POST',
        url: '/v1/api/listings/bulk',
        headers: { ...bearer(proKey), 'content-type': 'application/json' },
        payload: '{"listings": [',
      });
      expect(res.statusCode).toBe(402);
      expect(res.json()).toEqual(paywall);
    });

    it('answers 402 for a tier without API access even when its minute quota is spent (tier before rate limit)', async () => {
      const spent = await service.createAccount({ tier: 'enterprise' });
      const key = await service.createKey(spent, ['listings:write']);
      for (let batch = 0; batch < 6; batch += 1) {
        const responses = await Promise.all(
          Array.from({ length: 50 }, () => service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key) })),
        );
        expect(responses.map((r) => r.statusCode)).toEqual(Array(50).fill(200));
      }
      expect((await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key) })).statusCode).toBe(429);

      await setTier(spent.id, 'free');
      const res = await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key) });
      expect(res.statusCode).toBe(402);
      expect(res.json()).toEqual({ ...paywall, current_tier: 'free' });
    });
  });

  describe('scope (403)', () => {
    let readKey: string;

    beforeAll(async () => {
      readKey = await service.createKey(account, ['listings:read'], 'read only');
    });

    it('refuses a key without listings:write on the bulk route with 403, before reading an invalid body', async () => {
      const res = await service.request({
        method: 'POST',
        url: '/v1/api/listings/bulk',
        headers: { ...bearer(readKey), 'content-type': 'application/json' },
        payload: '{"listings": [',
      });
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({ error: 'Missing required scope: listings_write', code: 'missing_scope' });
    });

    it('refuses a key without listings:write on the bulk route with 403 for a valid body too', async () => {
      const res = await service.request({
        method: 'POST',
        url: '/v1/api/listings/bulk',
        headers: bearer(readKey),
        payload: { listings: [validListing()] },
      });
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({ error: 'Missing required scope: listings_write', code: 'missing_scope' });
    });

    it('lets the same key use GET /v1/api/me, which needs no scope', async () => {
      const res = await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(readKey) });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ id: account.id, key: { prefix: readKey.slice(9, 17), scopes: ['listings:read'] } });
    });
  });

  describe('authentication before the body is read', () => {
    const invalidJson = { 'content-type': 'application/json' };
    const oversized = JSON.stringify({ listings: [validListing({ description: 'x'.repeat(LISTINGS_BODY_LIMIT) })] });

    it('answers an unknown key with an invalid JSON body with 401', async () => {
      const res = await service.request({
        method: 'POST',
        url: '/v1/api/listings/bulk',
        headers: { ...bearer(unknownKey()), ...invalidJson },
        payload: '{"listings": [',
        remoteAddress: freshIp(),
      });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual(INVALID);
    });

    it('answers a malformed key with an invalid JSON body with 401', async () => {
      const res = await service.request({
        method: 'POST',
        url: '/v1/api/listings/bulk',
        headers: { authorization: 'Basic xyz', ...invalidJson },
        payload: 'not json at all',
        remoteAddress: freshIp(),
      });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual(MALFORMED);
    });

    it('answers an unknown key with a body over the 2 MB limit with 401', async () => {
      const res = await service.request({
        method: 'POST',
        url: '/v1/api/listings/bulk',
        headers: { ...bearer(unknownKey()), 'content-type': 'application/json' },
        payload: oversized,
        remoteAddress: freshIp(),
      });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual(INVALID);
    });

    // Controls: the same bodies do fail the body checks once the key is accepted, so the 401s
    // above show ordering, not bodies the service would have let through anyway.
    it.each([
      { name: 'invalid JSON', payload: '{"listings": [', status: 400 },
      { name: 'a body over 2 MB', payload: oversized, status: 413 },
    ])('refuses $name with $status once the key is accepted', async ({ payload, status }) => {
      const res = await service.request({
        method: 'POST',
        url: '/v1/api/listings/bulk',
        headers: { ...bearer(writeKey), 'content-type': 'application/json' },
        payload,
      });
      expect(res.statusCode).toBe(status);
    });
  });

  describe('tier changes', () => {
    it('apply on the next request: enterprise 200, pro 402, global 200 with the Global minute limit', async () => {
      const changing = await service.createAccount({ tier: 'enterprise' });
      const key = await service.createKey(changing, ['listings:write']);
      const me = () => service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key) });

      const asEnterprise = await me();
      expect(asEnterprise.statusCode).toBe(200);
      expect(asEnterprise.headers['x-ratelimit-limit-minute']).toBe('300');

      await setTier(changing.id, 'pro');
      const asPro = await me();
      expect(asPro.statusCode).toBe(402);
      expect(asPro.json()).toMatchObject({ current_tier: 'pro' });

      await setTier(changing.id, 'global');
      const asGlobal = await me();
      expect(asGlobal.statusCode).toBe(200);
      expect(asGlobal.json()).toMatchObject({ subscription_tier: 'global' });
      expect(asGlobal.headers['x-ratelimit-limit-minute']).toBe('1000');
    });
  });
});
