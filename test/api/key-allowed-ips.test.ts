import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, validListing } from '../support/fixtures.js';
import { startTestService, type TestAccount, type TestService } from '../support/test-service.js';

/**
 * A key's allowed addresses at the door (docs/access.md#allowed-addresses): which client
 * addresses pass, what a refused one gets, and what it does not get (quota spent, rate-limit
 * headers, a later check's answer).
 */

const NOT_ALLOWED = { error: 'API key not allowed from this address', code: 'ip_not_allowed' };
const RATE_LIMIT_HEADERS = ['x-ratelimit-limit-minute', 'x-ratelimit-remaining-minute', 'x-ratelimit-limit-day', 'x-ratelimit-remaining-day', 'ratelimit-policy', 'ratelimit'];

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ worker: false });
});
afterAll(async () => {
  await service?.close();
});

async function restrictedKey(account: TestAccount, allowedIps: string[], scopes = ['listings:write']): Promise<{ key: string; allowed_ips: string[] }> {
  const res = await service.request({ method: 'POST', url: '/v1/api/keys', headers: bearer(account.sessionToken), payload: { label: 'fixed egress', scopes, allowed_ips: allowedIps } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json();
}

const me = (key: string, remoteAddress: string, extra: { headers?: InjectOptions['headers'] } = {}) =>
  service.request({ method: 'GET', url: '/v1/api/me', headers: { ...bearer(key), ...(extra.headers ?? {}) }, remoteAddress });

function expectRefused(res: Awaited<ReturnType<TestService['request']>>): void {
  expect([res.statusCode, res.json()]).toEqual([403, NOT_ALLOWED]);
  for (const header of RATE_LIMIT_HEADERS) expect(res.headers[header], header).toBeUndefined();
}

describe('POST /v1/api/keys with allowed_ips', () => {
  it('stores and shows the entries canonical, merged, in the create answer, the list and /me', async () => {
    const account = await service.createAccount();
    const created = await restrictedKey(account, ['203.0.113.9/24', '203.0.113.0/24', '2001:0DB8::1', '::ffff:198.51.100.7']);
    const canonical = ['203.0.113.0/24', '2001:db8::1', '198.51.100.7'];
    expect(created.allowed_ips).toEqual(canonical);
    const list = await service.request({ method: 'GET', url: '/v1/api/keys', headers: bearer(account.sessionToken) });
    expect(list.json<{ keys: { allowed_ips: string[] }[] }>().keys[0]!.allowed_ips).toEqual(canonical);
    const whoAmI = await me(created.key, '203.0.113.77');
    expect(whoAmI.statusCode).toBe(200);
    expect(whoAmI.json<{ key: object }>().key).toMatchObject({ allowed_ips: canonical, expires_at: null });
  });

  it.each([
    ['an empty list', []],
    ['21 entries', Array.from({ length: 21 }, (_, i) => `198.51.100.${i}`)],
    ['a bad address', ['203.0.113.256']],
    ['a hostname', ['partner.example']],
    ['null', null],
  ])('answers %s with 400 naming allowed_ips, and creates nothing', async (_, allowedIps) => {
    const account = await service.createAccount();
    const res = await service.request({ method: 'POST', url: '/v1/api/keys', headers: bearer(account.sessionToken), payload: { label: 'x', scopes: ['listings:write'], allowed_ips: allowedIps } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'invalid_key_fields', error: expect.stringMatching(/^allowed_ips: /) });
    const list = await service.request({ method: 'GET', url: '/v1/api/keys', headers: bearer(account.sessionToken) });
    expect(list.json()).toEqual({ keys: [] });
  });
});

describe('a key with allowed_ips, used', () => {
  it.each([
    ['an IPv4 address', ['198.51.100.7'], '198.51.100.7', '198.51.100.8'],
    ['an IPv4 block', ['203.0.113.0/24'], '203.0.113.254', '203.0.112.1'],
    ['an IPv6 address', ['2001:db8::7'], '2001:db8::7', '2001:db8::8'],
    ['an IPv6 block', ['2001:db8:4::/48'], '2001:db8:4:1:2:3:4:5', '2001:db8:5::1'],
    ['an IPv4 entry, the socket speaking IPv4-mapped IPv6', ['203.0.113.0/24'], '::ffff:203.0.113.9', '::ffff:203.0.114.9'],
    ['an IPv4-mapped IPv6 entry, the client speaking IPv4', ['::ffff:198.51.100.7'], '198.51.100.7', '198.51.100.6'],
  ])('with %s: passes from inside, 403 ip_not_allowed from outside', async (_, allowedIps, inside, outside) => {
    const account = await service.createAccount();
    const { key } = await restrictedKey(account, allowedIps);
    expect((await me(key, inside)).statusCode).toBe(200);
    expectRefused(await me(key, outside));
  });

  it('spends none of the account\'s quota when refused', async () => {
    const account = await service.createAccount();
    const { key } = await restrictedKey(account, ['198.51.100.7']);
    const first = await me(key, '198.51.100.7');
    const spentBefore = Number(first.headers['x-ratelimit-remaining-minute']);
    for (let i = 0; i < 5; i += 1) expectRefused(await me(key, `192.0.2.${i + 1}`));
    const after = await me(key, '198.51.100.7');
    expect(Number(after.headers['x-ratelimit-remaining-minute'])).toBe(spentBefore - 1);
  });

  it('counts each refusal as a failed attempt: the 21st request from that address is 429, even with a good key', async () => {
    const account = await service.createAccount();
    const { key } = await restrictedKey(account, ['198.51.100.7']);
    const good = await service.createKey(account);
    for (let i = 0; i < 20; i += 1) expectRefused(await me(key, '192.0.2.200'));
    const locked = await me(good, '192.0.2.200');
    expect(locked.statusCode).toBe(429);
    expect(locked.json()).toMatchObject({ code: 'locked_out' });
    expect((await me(good, '192.0.2.201')).statusCode).toBe(200);
  });

  it('is decided before the tier: a pro account\'s key from outside is 403, from inside 402', async () => {
    const account = await service.createAccount();
    const { key } = await restrictedKey(account, ['198.51.100.7']);
    // note: keys are made on an API tier; the account moves off it before the key is first used.
    await service.sql`update accounts set subscription_tier = 'pro' where id = ${account.id}`;
    expectRefused(await me(key, '192.0.2.50'));
    expect((await me(key, '198.51.100.7')).statusCode).toBe(402);
  });

  it('is decided before the scope and the body on the bulk routes: 403 ip_not_allowed, nothing written', async () => {
    const account = await service.createAccount();
    const { key } = await restrictedKey(account, ['198.51.100.7'], ['jobs:read']);
    const outside = await service.request({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(key), payload: { listings: [validListing()] }, remoteAddress: '192.0.2.60' });
    expectRefused(outside);
    const inside = await service.request({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(key), payload: { listings: [validListing()] }, remoteAddress: '198.51.100.7' });
    expect([inside.statusCode, inside.json<{ code: string }>().code]).toEqual([403, 'missing_scope']);
    const [row] = await service.sql<{ n: number }[]>`select count(*)::int as n from listings where account_id = ${account.id}`;
    expect(row!.n).toBe(0);
  });

  it('takes a change of the addresses on the very next request, though the key is cached', async () => {
    const account = await service.createAccount();
    const created = await restrictedKey(account, ['198.51.100.7']);
    const id = (await service.request({ method: 'GET', url: '/v1/api/keys', headers: bearer(account.sessionToken) })).json<{ keys: { id: string }[] }>().keys[0]!.id;
    expect((await me(created.key, '198.51.100.7')).statusCode).toBe(200);
    expectRefused(await me(created.key, '203.0.113.1'));
    await service.request({ method: 'PATCH', url: `/v1/api/keys/${id}`, headers: bearer(account.sessionToken), payload: { allowed_ips: ['203.0.113.0/24'] } });
    expect((await me(created.key, '203.0.113.1')).statusCode).toBe(200);
    expectRefused(await me(created.key, '198.51.100.7'));
  });

  it('logs the refusal at warn with the client address, the key\'s account and prefix, never the key', async () => {
    const account = await service.createAccount();
    const { key } = await restrictedKey(account, ['198.51.100.7']);
    const res = await me(key, '192.0.2.77');
    expectRefused(res);
    const line = service.logs.find((l) => l['requestId'] === res.headers['x-request-id'] && l['msg'] === 'request completed');
    expect(line).toMatchObject({ level: 40, code: 'ip_not_allowed', remoteAddress: '192.0.2.77', accountId: account.id, keyPrefix: key.slice(9, 17) });
    expect(service.rawLogs()).not.toContain(key);
  });

  it('without TRUST_PROXY, ignores X-Forwarded-For: the socket address is the client', async () => {
    const account = await service.createAccount();
    const { key } = await restrictedKey(account, ['198.51.100.7']);
    expectRefused(await me(key, '10.0.0.5', { headers: { 'x-forwarded-for': '198.51.100.7' } }));
    expect((await me(key, '198.51.100.7', { headers: { 'x-forwarded-for': '192.0.2.1' } })).statusCode).toBe(200);
  });
});

describe('a key with allowed_ips behind a proxy (TRUST_PROXY=true)', () => {
  let proxied: TestService;
  beforeAll(async () => {
    proxied = await startTestService({ worker: false, env: { TRUST_PROXY: 'true' } });
  });
  afterAll(async () => {
    await proxied?.close();
  });

  it('matches the address of X-Forwarded-For, not the proxy\'s, and ignores a forwarded value that is no address', async () => {
    const account = await proxied.createAccount();
    const res = await proxied.request({ method: 'POST', url: '/v1/api/keys', headers: bearer(account.sessionToken), payload: { label: 'x', scopes: ['listings:write'], allowed_ips: ['198.51.100.0/24'] } });
    const { key } = res.json<{ key: string }>();
    const via = (forwarded: string) => proxied.request({ method: 'GET', url: '/v1/api/me', headers: { ...bearer(key), 'x-forwarded-for': forwarded }, remoteAddress: '10.0.0.2' });
    expect((await via('198.51.100.9')).statusCode).toBe(200);
    expect((await via('::ffff:198.51.100.9')).statusCode).toBe(200);
    expectRefused(await via('192.0.2.9'));
    // not an address: the socket's (the proxy, 10.0.0.2) counts, which is not allowed
    expectRefused(await via('198.51.100.9.evil'));
  });
});
