import { createHash, randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVICE_VERSION } from '../../src/api/version.js';
import { bearer, validListing } from '../support/fixtures.js';
import { startTestService, type TestAccount, type TestService } from '../support/test-service.js';

const ANY_NUMBER: unknown = expect.any(Number);
const ANY_STRING: unknown = expect.any(String);

const ALLOWED_ORIGIN = 'https://app.example.test';
const EVIL_ORIGIN = 'https://evil.example.test';
const CORS_REFUSED = { error: 'Cross-origin requests are not allowed', code: 'origin_not_allowed' };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function allowHeaders(res: LightMyRequestResponse): string[] {
  return Object.keys(res.headers).filter((name) => name.toLowerCase().startsWith('access-control-allow-'));
}

/** A refusal by the CORS check: 403, its error, and nothing that would let a browser read it. */
function expectCorsRefused(res: LightMyRequestResponse): void {
  expect(res.statusCode).toBe(403);
  expect(res.json()).toEqual(CORS_REFUSED);
  expect(allowHeaders(res)).toEqual([]);
}

/** The preflight a browser sends from `origin` before a bulk import. */
function preflight(service: TestService, origin: string): Promise<LightMyRequestResponse> {
  return service.request({
    method: 'OPTIONS',
    url: '/v1/api/listings/bulk',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
  });
}

describe('CORS (CORS_ALLOWED_ORIGINS=https://app.example.test)', () => {
  let service: TestService;
  let key: string;

  beforeAll(async () => {
    service = await startTestService({ worker: false, env: { CORS_ALLOWED_ORIGINS: ALLOWED_ORIGIN } });
    key = await service.createKey(await service.createAccount());
  });
  afterAll(async () => {
    await service?.close();
  });

  it.each([
    ['a request', () => service.request({ method: 'GET', url: '/v1/api/me', headers: { ...bearer(key), origin: EVIL_ORIGIN } })],
    ['a preflight', () => preflight(service, EVIL_ORIGIN)],
  ])('refuses %s from another origin with 403 and no Access-Control-Allow-* header', async (_what, send) => {
    expectCorsRefused(await send());
  });

  it('refuses another origin on GET /v1/health too', async () => {
    const res = await service.request({ method: 'GET', url: '/v1/health', headers: { origin: EVIL_ORIGIN } });
    expect(res.statusCode).toBe(403);
    expect(allowHeaders(res)).toEqual([]);
  });

  it('answers a preflight from the allowed origin with Access-Control-Allow-Origin', async () => {
    const res = await preflight(service, ALLOWED_ORIGIN);
    expect(res.statusCode).toBeLessThan(300);
    expect(res.headers['access-control-allow-origin']).toBe(ALLOWED_ORIGIN);
  });

  it('serves a request from the allowed origin with Access-Control-Allow-Origin', async () => {
    const res = await service.request({ method: 'GET', url: '/v1/api/me', headers: { ...bearer(key), origin: ALLOWED_ORIGIN } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe(ALLOWED_ORIGIN);
  });

  it('leaves a request without Origin unaffected', async () => {
    const res = await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key) });
    expect(res.statusCode).toBe(200);
    expect(allowHeaders(res)).toEqual([]);
  });
});

describe('cross-cutting behaviour (default configuration)', () => {
  let service: TestService;
  let account: TestAccount;
  let key: string;

  beforeAll(async () => {
    service = await startTestService();
    account = await service.createAccount({ name: 'Acme Prints' });
    key = await service.createKey(account, ['listings:write']);
  });
  afterAll(async () => {
    await service?.close();
  });

  describe('CORS with no allowed origins (the default)', () => {
    it('refuses any Origin with 403', async () => {
      expectCorsRefused(await service.request({ method: 'GET', url: '/v1/api/me', headers: { ...bearer(key), origin: ALLOWED_ORIGIN } }));
    });
  });

  describe('X-Request-Id', () => {
    it.each([
      { name: '200 (GET /v1/health)', url: '/v1/health', headers: {}, status: 200 },
      { name: '200 (GET /v1/api/me)', url: '/v1/api/me', headers: 'valid-key', status: 200 },
      { name: '401 (GET /v1/api/me without a key)', url: '/v1/api/me', headers: {}, status: 401 },
      { name: '404 (unknown route)', url: '/v1/nowhere', headers: {}, status: 404 },
    ])('is generated on a $name response', async ({ url, headers, status }) => {
      const res = await service.request({ method: 'GET', url, headers: headers === 'valid-key' ? bearer(key) : headers, remoteAddress: '192.0.2.10' });
      expect(res.statusCode).toBe(status);
      expect(res.headers['x-request-id']).toMatch(UUID);
    });

    it('gives each request its own generated id', async () => {
      const a = await service.request({ method: 'GET', url: '/v1/health' });
      const b = await service.request({ method: 'GET', url: '/v1/health' });
      expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
    });

    it.each([
      { name: 'a 401', url: '/v1/api/me', status: 401 },
      { name: 'a 404', url: '/v1/nowhere', status: 404 },
      { name: 'a 200', url: '/v1/health', status: 200 },
    ])('echoes a sane incoming id (abc-123) on $name', async ({ url, status }) => {
      const res = await service.request({ method: 'GET', url, headers: { 'x-request-id': 'abc-123' }, remoteAddress: '192.0.2.11' });
      expect(res.statusCode).toBe(status);
      expect(res.headers['x-request-id']).toBe('abc-123');
    });

    it.each([
      { name: '300 characters', id: 'a'.repeat(300) },
      { name: 'angle brackets', id: '<script>alert(1)</script>' },
      { name: 'spaces', id: 'abc 123' },
      { name: 'quotes and braces', id: '{"x":"y"}' },
      { name: 'the shape of an API key', id: `svc_live_${'a'.repeat(8)}_${'b'.repeat(32)}` },
      { name: 'the shape of an API key in capitals', id: `SVC_LIVE_${'A'.repeat(8)}_${'B'.repeat(32)}` },
      { name: 'the shape of a session token', id: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.c2lnbmF0dXJl' },
      { name: 'a key within it', id: `trace-svc_live_${'a'.repeat(8)}_${'b'.repeat(32)}-1` },
    ])('replaces an incoming id with $name by a generated one', async ({ id }) => {
      const res = await service.request({ method: 'GET', url: '/v1/health', headers: { 'x-request-id': id } });
      expect(res.statusCode).toBe(200);
      expect(res.headers['x-request-id']).not.toBe(id);
      expect(res.headers['x-request-id']).toMatch(UUID);
    });

    it('is on the log lines of that request', async () => {
      const requestId = `trace-${randomBytes(6).toString('hex')}`;
      const res = await service.request({ method: 'GET', url: '/v1/api/me', headers: { ...bearer(key), 'x-request-id': requestId } });
      expect(res.statusCode).toBe(200);
      const lines = service.logs.filter((line) => line.requestId === requestId);
      expect(lines.map((line) => line.msg)).toEqual(['request completed']);
    });

    it('is on the log lines of a generated id too', async () => {
      const res = await service.request({ method: 'GET', url: '/v1/nowhere' });
      const requestId = res.headers['x-request-id'];
      expect(requestId).toMatch(UUID);
      const lines = service.logs.filter((line) => line.requestId === requestId);
      expect(lines.map((line) => line.msg)).toEqual(['request completed']);
    });

    it('is on the worker\'s log line of a bulk import', async () => {
      const requestId = `bulk-${randomBytes(6).toString('hex')}`;
      const res = await service.request({
        method: 'POST',
        url: '/v1/api/listings/bulk',
        headers: { ...bearer(key), 'x-request-id': requestId },
        payload: { listings: [validListing()] },
      });
      expect(res.statusCode).toBe(201);
      const messages = service.logs.filter((line) => line.requestId === requestId).map((line) => line.msg);
      expect(messages).toEqual(expect.arrayContaining(['import written', 'request completed']));
      expect(messages.filter((msg) => msg === 'request completed')).toHaveLength(1);
    });
  });

  describe('unknown routes', () => {
    it.each(['/nowhere', '/v1/nowhere', '/v1/api/nowhere', '/v2/api/me'])('answers GET %s with 404 {"error":"Not found"}', async (url) => {
      const res = await service.request({ method: 'GET', url, remoteAddress: '192.0.2.12' });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: 'Not found', code: 'not_found' });
    });

    it('answers an unknown method on a known path with 405 and Allow (test/api/method-not-allowed.test.ts)', async () => {
      const res = await service.request({ method: 'PUT', url: '/v1/health' });
      expect(res.statusCode).toBe(405);
      expect(res.headers.allow).toBe('GET, HEAD');
      expect(res.json()).toEqual({ error: 'Method not allowed', code: 'method_not_allowed' });
    });
  });

  describe('GET /v1/health', () => {
    it('answers 200 with status, version, uptime, both checks ok and an ISO 8601 timestamp', async () => {
      const res = await service.request({ method: 'GET', url: '/v1/health' });
      expect(res.statusCode).toBe(200);
      const body = res.json<Record<string, unknown>>();
      expect(body).toEqual({
        status: 'ok',
        version: SERVICE_VERSION,
        uptime_sec: ANY_NUMBER,
        checks: { postgres: 'ok', redis: 'ok' },
        timestamp: ANY_STRING,
      });
      expect(Number.isInteger(body.uptime_sec)).toBe(true);
      expect(body.uptime_sec).toBeGreaterThanOrEqual(0);
      const timestamp = body.timestamp as string;
      expect(new Date(Date.parse(timestamp)).toISOString()).toBe(timestamp);
    });

    it('needs no key', async () => {
      const res = await service.request({ method: 'GET', url: '/v1/health', headers: { authorization: 'Bearer nonsense' } });
      expect(res.statusCode).toBe(200);
    });
  });

  describe('secrets in logs', () => {
    it('never logs the API key, its SHA-256 or the session token', async () => {
      const secretKey = await service.createKey(account, ['listings:write'], 'secret check');
      const me = await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(secretKey) });
      expect(me.statusCode).toBe(200);
      const bulk = await service.request({
        method: 'POST',
        url: '/v1/api/listings/bulk',
        headers: bearer(secretKey),
        payload: { listings: [validListing(), validListing({ currency: 'EUR' })] },
      });
      expect(bulk.statusCode).toBe(201);
      const keys = await service.request({ method: 'GET', url: '/v1/api/keys', headers: bearer(account.sessionToken) });
      expect(keys.statusCode).toBe(200);

      const raw = service.rawLogs();
      expect(raw.length).toBeGreaterThan(0);
      const hash = createHash('sha256').update(secretKey).digest();
      expect(raw).not.toContain(secretKey);
      expect(raw).not.toContain(secretKey.slice(18));
      expect(raw.toLowerCase()).not.toContain(hash.toString('hex'));
      expect(raw).not.toContain(hash.toString('base64'));
      expect(raw).not.toContain(account.sessionToken);
      expect(raw).not.toContain(account.sessionToken.split('.')[2]!);
    });

    it('never logs a rejected key', async () => {
      const rejected = `svc_live_${randomBytes(4).toString('hex')}_${randomBytes(16).toString('hex')}`;
      const res = await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(rejected), remoteAddress: '192.0.2.13' });
      expect(res.statusCode).toBe(401);
      expect(service.rawLogs()).not.toContain(rejected.slice(18));
    });
  });
});

describe('GET /v1/health with Redis down', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
    // The command client refuses commands once disconnected (no offline queue, no reconnect).
    service.deps.redis.disconnect();
  });
  afterAll(async () => {
    await service?.close();
  });

  it('answers 503 with status "degraded" and the Redis check "down"', async () => {
    const res = await service.request({ method: 'GET', url: '/v1/health' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ status: 'degraded', checks: { postgres: 'ok', redis: 'down' } });
  });

  it('answers an API-key request with a JSON server error that names no internals', async () => {
    const res = await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(`svc_live_${'a'.repeat(8)}_${'b'.repeat(32)}`) });
    expect([500, 503]).toContain(res.statusCode);
    expect(res.json()).toMatchObject({ error: ANY_STRING });
    expect(res.body).not.toMatch(/redis|connection|stack|\bat /i);
    expect(res.headers['x-request-id']).toMatch(UUID);
  });
});
