import { randomUUID } from 'node:crypto';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signSessionToken } from '../../src/shared/access/session-token.js';
import { bearer } from '../support/fixtures.js';
import { startTestService, TEST_SESSION_SECRET, type TestAccount, type TestService } from '../support/test-service.js';

const MALFORMED = { error: 'Missing or malformed session token', code: 'missing_session_token' };
const INVALID = { error: 'Invalid session token', code: 'invalid_session_token' };

interface KeyRoute {
  name: string;
  method: 'GET' | 'POST' | 'DELETE';
  /** the URL for a key id; only DELETE uses it */
  url(keyId: string): string;
  payload?: Record<string, unknown>;
  okStatus: number;
}

const ROUTES: KeyRoute[] = [
  { name: 'GET /v1/api/keys', method: 'GET', url: () => '/v1/api/keys', okStatus: 200 },
  {
    name: 'POST /v1/api/keys',
    method: 'POST',
    url: () => '/v1/api/keys',
    payload: { label: 'session auth', scopes: ['listings:write'] },
    okStatus: 201,
  },
  { name: 'DELETE /v1/api/keys/:id', method: 'DELETE', url: (id) => `/v1/api/keys/${id}`, okStatus: 200 },
];

let ipCounter = 0;
/** A distinct client address per test, so the 401s a test provokes never add up to an IP lockout. */
function freshIp(): string {
  ipCounter += 1;
  return `10.9.${Math.floor(ipCounter / 250)}.${(ipCounter % 250) + 1}`;
}

const secretKey = (secret: string) => new TextEncoder().encode(secret);
const nowSec = () => Math.floor(Date.now() / 1000);

let service: TestService;
/** an Enterprise account whose id appears in the forged tokens */
let victim: TestAccount;
let victimApiKey: string;

beforeAll(async () => {
  service = await startTestService({ worker: false });
  victim = await service.createAccount({ tier: 'enterprise' });
  victimApiKey = await service.createKey(victim);
});
afterAll(async () => {
  await service?.close();
});

function callRoute(
  route: KeyRoute,
  authorization: string | undefined,
  keyId: string = randomUUID(),
  remoteAddress: string = freshIp(),
): Promise<LightMyRequestResponse> {
  const options: InjectOptions = {
    method: route.method,
    url: route.url(keyId),
    remoteAddress,
    headers: authorization === undefined ? {} : { authorization },
  };
  if (route.payload !== undefined) options.payload = route.payload;
  return service.request(options);
}

async function keyCount(accountId: string): Promise<number> {
  const [row] = await service.sql<{ n: number }[]>`select count(*)::int as n from api_keys where account_id = ${accountId}`;
  return row?.n ?? -1;
}

async function createKeyId(account: TestAccount): Promise<string> {
  const res = await service.request({
    method: 'POST',
    url: '/v1/api/keys',
    headers: bearer(account.sessionToken),
    payload: { label: 'to revoke', scopes: ['listings:write'] },
  });
  expect(res.statusCode).toBe(201);
  return res.json<{ metadata: { id: string } }>().metadata.id;
}

/** Builds an Authorization header value; async because most cases sign a token. */
type AuthorizationCase = [string, () => Promise<string | undefined>, { error: string }];

const FAILING_AUTHORIZATIONS: AuthorizationCase[] = [
  ['no Authorization header', async () => undefined, MALFORMED],
  ['an empty Authorization header', async () => '', MALFORMED],
  ['"Bearer" with no token', async () => 'Bearer ', MALFORMED],
  ['a bearer token that is not a JWT', async () => 'Bearer not-a-jwt', MALFORMED],
  ['an API key instead of a session token', async () => `Bearer ${victimApiKey}`, MALFORMED],
  ['Basic credentials', async () => `Basic ${Buffer.from('user:pass').toString('base64')}`, MALFORMED],
  ['a valid session token without the Bearer scheme', async () => victim.sessionToken, MALFORMED],
  [
    'a token signed with another secret',
    async () => `Bearer ${await signSessionToken(victim.id, 'another-secret-that-is-long-enough-0123456789', 3600)}`,
    INVALID,
  ],
  [
    'an expired token',
    async () =>
      `Bearer ${await new SignJWT({})
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(victim.id)
        .setIssuedAt(nowSec() - 7200)
        .setExpirationTime(nowSec() - 3600)
        .sign(secretKey(TEST_SESSION_SECRET))}`,
    INVALID,
  ],
  [
    'a token without exp',
    async () =>
      `Bearer ${await new SignJWT({})
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(victim.id)
        .setIssuedAt()
        .sign(secretKey(TEST_SESSION_SECRET))}`,
    INVALID,
  ],
  [
    'a token without iat',
    async () =>
      `Bearer ${await new SignJWT({})
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(victim.id)
        .setExpirationTime(nowSec() + 3600)
        .sign(secretKey(TEST_SESSION_SECRET))}`,
    INVALID,
  ],
  [
    'a token living longer than SESSION_MAX_TTL_SEC (7 days and a second)',
    async () =>
      `Bearer ${await new SignJWT({})
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(victim.id)
        .setIssuedAt(nowSec())
        .setExpirationTime(nowSec() + 604_801)
        .sign(secretKey(TEST_SESSION_SECRET))}`,
    INVALID,
  ],
  [
    'a 100-year token',
    async () => `Bearer ${await signSessionToken(victim.id, TEST_SESSION_SECRET, 100 * 365 * 86_400)}`,
    INVALID,
  ],
  [
    'a token issued in the future (iat two minutes ahead)',
    async () =>
      `Bearer ${await new SignJWT({})
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(victim.id)
        .setIssuedAt(nowSec() + 120)
        .setExpirationTime(nowSec() + 3600)
        .sign(secretKey(TEST_SESSION_SECRET))}`,
    INVALID,
  ],
  [
    'a token whose payload was swapped after signing',
    async () => {
      const [header, , signature] = victim.sessionToken.split('.');
      const forged = Buffer.from(JSON.stringify({ sub: randomUUID(), exp: nowSec() + 3600 })).toString('base64url');
      return `Bearer ${header}.${forged}.${signature}`;
    },
    INVALID,
  ],
  ['a token for an unknown account (random uuid sub)', async () => `Bearer ${await signSessionToken(randomUUID(), TEST_SESSION_SECRET, 3600)}`, INVALID],
  ['a token whose sub is not a uuid', async () => `Bearer ${await signSessionToken('not-a-uuid', TEST_SESSION_SECRET, 3600)}`, INVALID],
];

describe.each(ROUTES)('$name', (route) => {
  it.each(FAILING_AUTHORIZATIONS)('returns 401 for %s', async (_case, authorization, expected) => {
    const res = await callRoute(route, await authorization());
    expect(res.statusCode).toBe(401);
    expect(res.json()).toStrictEqual(expected);
  });

  it.each(['pro', 'free'])('returns 402 with the upgrade body for an account on tier %s', async (tier) => {
    const account = await service.createAccount({ tier });
    const res = await callRoute(route, `Bearer ${account.sessionToken}`);
    expect(res.statusCode).toBe(402);
    expect(res.json()).toStrictEqual({
      error: 'API access requires an Enterprise or Global subscription',
      code: 'subscription_required',
      current_tier: tier,
      upgrade_url: 'https://example.test/upgrade',
    });
    expect(await keyCount(account.id)).toBe(0);
  });

  it.each(['enterprise', 'global'])('accepts the session token of an account on tier %s', async (tier) => {
    const account = await service.createAccount({ tier });
    const keyId = await createKeyId(account);
    const res = await callRoute(route, `Bearer ${account.sessionToken}`, keyId);
    expect(res.statusCode).toBe(route.okStatus);
  });

  it('accepts a token that lives exactly SESSION_MAX_TTL_SEC (7 days)', async () => {
    const account = await service.createAccount({ tier: 'enterprise' });
    const token = await signSessionToken(account.id, TEST_SESSION_SECRET, 604_800);
    const res = await callRoute(route, `Bearer ${token}`, await createKeyId(account));
    expect(res.statusCode).toBe(route.okStatus);
  });

  it('carries no X-RateLimit-* headers on a successful response', async () => {
    const account = await service.createAccount();
    const keyId = await createKeyId(account);
    const res = await callRoute(route, `Bearer ${account.sessionToken}`, keyId);
    expect(res.statusCode).toBe(route.okStatus);
    expect(Object.keys(res.headers).filter((h) => h.toLowerCase().startsWith('x-ratelimit'))).toEqual([]);
  });
});

describe('POST /v1/api/keys', () => {
  it('creates no key for a token signed with another secret', async () => {
    const account = await service.createAccount();
    const forged = await signSessionToken(account.id, 'another-secret-that-is-long-enough-0123456789', 3600);
    const res = await callRoute(ROUTES[1]!, `Bearer ${forged}`);
    expect(res.statusCode).toBe(401);
    expect(await keyCount(account.id)).toBe(0);
  });

  it('carries no X-RateLimit-* headers on a 400 or a 429', async () => {
    const account = await service.createAccount();
    const invalid = await service.request({
      method: 'POST',
      url: '/v1/api/keys',
      headers: bearer(account.sessionToken),
      payload: { label: '', scopes: [] },
    });
    expect(invalid.statusCode).toBe(400);
    expect(Object.keys(invalid.headers).filter((h) => h.startsWith('x-ratelimit'))).toEqual([]);
    for (let i = 0; i < 20; i += 1) await createKeyId(account);
    const capped = await callRoute(ROUTES[1]!, `Bearer ${account.sessionToken}`);
    expect(capped.statusCode).toBe(429);
    expect(Object.keys(capped.headers).filter((h) => h.startsWith('x-ratelimit'))).toEqual([]);
  });
});

describe('DELETE /v1/api/keys/:id', () => {
  it('carries no X-RateLimit-* headers on a 404', async () => {
    const account = await service.createAccount();
    const res = await callRoute(ROUTES[2]!, `Bearer ${account.sessionToken}`, randomUUID());
    expect(res.statusCode).toBe(404);
    expect(Object.keys(res.headers).filter((h) => h.startsWith('x-ratelimit'))).toEqual([]);
  });
});

describe('GET /v1/api/me', () => {
  it('does not count key management requests against the account quota', async () => {
    const account = await service.createAccount({ tier: 'enterprise' });
    const ids = [await createKeyId(account), await createKeyId(account), await createKeyId(account)];
    for (const route of ROUTES) {
      expect((await callRoute(route, `Bearer ${account.sessionToken}`, ids.pop())).statusCode).toBe(route.okStatus);
    }
    const key = await service.createKey(account);
    const res = await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key), remoteAddress: freshIp() });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-ratelimit-limit-minute']).toBe('300');
    expect(res.headers['x-ratelimit-remaining-minute']).toBe('299');
    expect(res.headers['x-ratelimit-remaining-day']).toBe('99999');
  });

  it('rejects a session token as an API key with 401 Missing or malformed API key', async () => {
    const res = await service.request({
      method: 'GET',
      url: '/v1/api/me',
      headers: bearer(victim.sessionToken),
      remoteAddress: freshIp(),
    });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toStrictEqual({ error: 'Missing or malformed API key', code: 'missing_api_key' });
  });
});

describe('Key management and the IP lockout', () => {
  it('locks an IP out after 20 failed session authentications, even for a valid session token', async () => {
    const ip = freshIp();
    for (let i = 0; i < 20; i += 1) {
      const res = await callRoute(ROUTES[0]!, 'Bearer not-a-jwt', undefined, ip);
      expect(res.statusCode).toBe(401);
    }
    const res = await callRoute(ROUTES[0]!, `Bearer ${victim.sessionToken}`, undefined, ip);
    expect(res.statusCode).toBe(429);
    const body = res.json<{ error: string; code: string; retry_after_sec: number }>();
    expect(Object.keys(body).sort()).toEqual(['code', 'error', 'retry_after_sec']);
    expect(body.error).toBe('Too many failed authentication attempts');
    expect(body.code).toBe('locked_out');
    expect(Number.isInteger(body.retry_after_sec)).toBe(true);
    expect(body.retry_after_sec).toBeGreaterThan(0);
    expect(res.headers['retry-after']).toBe(String(body.retry_after_sec));
  });

  it('does not lock out other IPs', async () => {
    const locked = freshIp();
    for (let i = 0; i < 20; i += 1) await callRoute(ROUTES[0]!, 'Bearer not-a-jwt', undefined, locked);
    expect((await callRoute(ROUTES[0]!, `Bearer ${victim.sessionToken}`, undefined, locked)).statusCode).toBe(429);
    expect((await callRoute(ROUTES[0]!, `Bearer ${victim.sessionToken}`, undefined, freshIp())).statusCode).toBe(200);
  });
});
