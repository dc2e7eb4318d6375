import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validListing, validMachine } from '../support/fixtures.js';
import { rawRequest, requestHead } from '../support/raw-http.js';
import { startTestService, type TestAccount, type TestService } from '../support/test-service.js';

function unknownKey(): string {
  return `svc_live_${randomBytes(4).toString('hex')}_${randomBytes(16).toString('hex')}`;
}

const LOCKED_OUT = 'Too many failed authentication attempts';

/**
 * Every `/v1/api/*` route, spelt three more ways than its plain path: a percent-encoded letter in
 * `api`, another, and an absolute-form request target (RFC 9112 3.2.2).
 */
function spellings(path: string): string[] {
  return [
    path,
    path.replace('/v1/api/', '/v1/%61pi/'),
    path.replace('/v1/api/', '/v1/ap%69/'),
    `http://api.example.test${path}`,
  ];
}

describe('the lockout whatever the spelling of the request target', () => {
  let service: TestService;
  let port: number;
  let account: TestAccount;
  let apiKey: string;
  let keyId: string;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
    await service.app.listen({ port: 0, host: '127.0.0.1' });
    port = (service.app.server.address() as AddressInfo).port;
    account = await service.createAccount();
    apiKey = await service.createKey(account, ['listings:write']);
    const list = await service.request({ method: 'GET', url: '/v1/api/keys', headers: { authorization: `Bearer ${account.sessionToken}` } });
    keyId = list.json<{ keys: { id: string }[] }>().keys[0]!.id;
  });
  afterAll(async () => {
    await service?.close();
  });

  const routes = () => [
    { method: 'GET', path: '/v1/api/me', token: apiKey, body: '' },
    { method: 'POST', path: '/v1/api/machines/bulk', token: apiKey, body: JSON.stringify({ machines: [validMachine()] }) },
    { method: 'POST', path: '/v1/api/listings/bulk', token: apiKey, body: JSON.stringify({ listings: [validListing()] }) },
    { method: 'GET', path: '/v1/api/keys', token: account.sessionToken, body: '' },
    { method: 'POST', path: '/v1/api/keys', token: account.sessionToken, body: JSON.stringify({ label: 'x', scopes: ['listings:read'] }) },
    { method: 'DELETE', path: `/v1/api/keys/${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}`, token: account.sessionToken, body: '' },
  ];

  const send = async (method: string, target: string, token: string, body: string) => {
    const headers = { authorization: `Bearer ${token}`, connection: 'close', ...(body === '' ? {} : { 'content-type': 'application/json' }) };
    return rawRequest(port, { text: requestHead(method, target, headers, Buffer.byteLength(body)) + body });
  };

  it('routes every spelling to its endpoint before the lockout (the spellings reach the routes)', async () => {
    for (const target of spellings('/v1/api/keys')) {
      const reply = await send('GET', target, account.sessionToken, '');
      expect(reply.status, target).toBe(200);
      expect(JSON.parse(reply.body)).toHaveProperty('keys');
    }
    for (const target of spellings('/v1/api/me')) {
      expect((await send('GET', target, apiKey, '')).status, target).toBe(200);
    }
    expect(keyId).toBeDefined();
  });

  it('counts bad tokens sent under any spelling, and then refuses every spelling of every route with 429', async () => {
    // 20 failures, spread over the spellings of key management and /me.
    const failing = [...spellings('/v1/api/keys'), ...spellings('/v1/api/me')];
    for (let i = 0; i < 20; i += 1) {
      const target = failing[i % failing.length]!;
      const token = target.includes('/keys') ? 'not-a-session-token' : unknownKey();
      expect((await send('GET', target, token, '')).status, target).toBe(401);
    }
    for (const route of routes()) {
      for (const target of spellings(route.path)) {
        const reply = await send(route.method, target, route.token, route.body);
        expect(reply.status, `${route.method} ${target}`).toBe(429);
        expect(JSON.parse(reply.body), `${route.method} ${target}`).toMatchObject({ error: LOCKED_OUT, code: 'locked_out' });
      }
    }
    // A bad token under a spelt path is 429 too, so guessing stays stopped.
    expect((await send('GET', '/v1/%61pi/keys', 'not-a-session-token', '')).status).toBe(429);
    // Health is never locked out.
    expect((await send('GET', '/v1/health', '', '')).status).toBe(200);
  });
});
