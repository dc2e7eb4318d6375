import { randomBytes, randomUUID } from 'node:crypto';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';

const METHOD_NOT_ALLOWED = { error: 'Method not allowed', code: 'method_not_allowed' };
const NOT_FOUND = { error: 'Not found', code: 'not_found' };

type Method = NonNullable<InjectOptions['method']>;

let service: TestService;

beforeAll(async () => {
  service = await startTestService({ worker: false, env: { CORS_ALLOWED_ORIGINS: 'https://app.example.test' } });
});
afterAll(async () => {
  await service?.close();
});

let ipCounter = 0;
/** A fresh client address per request, so nothing here adds up to a lockout by accident. */
function freshIp(): string {
  ipCounter += 1;
  return `10.41.${Math.floor(ipCounter / 250)}.${(ipCounter % 250) + 1}`;
}

const send = (method: Method, url: string, options: Partial<InjectOptions> = {}) => service.request({ method, url, remoteAddress: freshIp(), ...options });

describe('a known path asked with a method it does not take', () => {
  it.each<[Method, string, string]>([
    ['PUT', '/v1/api/me', 'GET, HEAD'],
    ['POST', '/v1/api/me', 'GET, HEAD'],
    // note: the bulk routes' own paths, which a row's id route would also match: theirs alone
    ['GET', '/v1/api/listings/bulk', 'POST'],
    ['PUT', '/v1/api/listings/bulk', 'POST'],
    ['DELETE', '/v1/api/machines/bulk', 'POST'],
    ['GET', '/v1/api/listings/bulk-archive', 'POST'],
    ['GET', '/v1/api/machines/bulk-delete', 'POST'],
    ['PUT', '/v1/api/machines', 'GET, HEAD'],
    ['POST', `/v1/api/listings/${randomUUID()}`, 'GET, HEAD'],
    ['DELETE', '/v1/api/imports', 'GET, HEAD, POST'],
    ['PATCH', '/v1/api/imports/imp-1', 'GET, HEAD'],
    ['GET', '/v1/api/imports/imp-1/cancel', 'POST'],
    ['POST', '/v1/api/imports/imp-1/errors', 'GET, HEAD'],
    ['PUT', '/v1/api/keys', 'GET, HEAD, POST'],
    ['DELETE', '/v1/api/keys', 'GET, HEAD, POST'],
    ['GET', `/v1/api/keys/${randomUUID()}`, 'PATCH, DELETE'],
    ['POST', '/v1/health', 'GET, HEAD'],
    ['DELETE', '/v1/openapi.json', 'GET, HEAD'],
  ])('answers %s %s with 405 and Allow: %s', async (method, url, allow) => {
    const res = await send(method, url);
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe(allow);
    expect(res.json()).toEqual(METHOD_NOT_ALLOWED);
    expect(res.headers['x-request-id']).toBeDefined();
  });

  it('answers HEAD on a path that takes only POST with 405, Allow and no body', async () => {
    const res = await send('HEAD', '/v1/api/imports/imp-1/cancel');
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('POST');
    expect(res.body).toBe('');
  });

  it('answers HEAD where GET is taken as GET is answered (here 401 without a key), never 405', async () => {
    const head = await send('HEAD', '/v1/api/me');
    expect(head.statusCode).toBe(401);
    expect(head.headers.allow).toBeUndefined();
    expect((await send('HEAD', '/v1/health')).statusCode).toBe(200);
  });

  it('reads the path as the router does: a query string and an encoded letter change nothing', async () => {
    for (const url of ['/v1/api/me?dry_run=true', '/v1/%61pi/me', '/v1/api/me#top']) {
      const res = await send('PUT', url);
      expect(res.statusCode, url).toBe(405);
      expect(res.headers.allow, url).toBe('GET, HEAD');
    }
  });

  it('takes an empty last segment as the router does: a parameter, empty', async () => {
    expect((await send('DELETE', '/v1/api/keys/')).statusCode).toBe(401);
    const res = await send('GET', '/v1/api/keys/');
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('PATCH, DELETE');
  });

  it('is answered before authentication: a valid session token does not change it', async () => {
    const account = await service.createAccount();
    const res = await send('PUT', '/v1/api/keys', { headers: bearer(account.sessionToken), payload: { label: 'x', scopes: ['listings:write'] } });
    expect(res.statusCode).toBe(405);
    expect(res.json()).toEqual(METHOD_NOT_ALLOWED);
  });
});

describe('a path no route has', () => {
  it.each<[Method, string]>([
    ['GET', '/v1/api/nowhere'],
    ['PUT', '/v1/api/nowhere'],
    ['GET', '/v1/api/me/'],
    ['PUT', '/v1/api/me/'],
    ['GET', '/v1/API/me'],
    ['DELETE', '/v1/api/keys/a/b'],
    ['GET', '/v2/api/me'],
    ['POST', '/nowhere'],
  ])('answers %s %s with 404 Not found, without Allow', async (method, url) => {
    const res = await send(method, url);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual(NOT_FOUND);
    expect(res.headers.allow).toBeUndefined();
  });
});

describe('405 and the refusals that come first', () => {
  it('refuses an origin not on the allow-list with 403, whatever the method', async () => {
    const res = await send('PUT', '/v1/api/me', { headers: { origin: 'https://elsewhere.example' } });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({ error: 'Cross-origin requests are not allowed', code: 'origin_not_allowed' });
    expect(res.headers.allow).toBeUndefined();
  });

  it('answers an allowed origin\'s wrong method with 405', async () => {
    const res = await send('PUT', '/v1/api/me', { headers: { origin: 'https://app.example.test' } });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD');
  });

  describe('from an address locked out after 20 failed authentications', () => {
    const ip = '198.51.100.45';

    beforeAll(async () => {
      for (let i = 0; i < 20; i += 1) {
        const res = await service.request({
          method: 'GET',
          url: '/v1/api/me',
          headers: bearer(`svc_live_${randomBytes(4).toString('hex')}_${randomBytes(16).toString('hex')}`),
          remoteAddress: ip,
        });
        expect(res.statusCode).toBe(401);
      }
    });

    it.each<[Method, string]>([
      ['PUT', '/v1/api/me'],
      ['GET', '/v1/api/listings/bulk'],
      ['DELETE', '/v1/api/imports'],
      ['GET', `/v1/api/keys/${randomUUID()}`],
      ['PUT', '/v1/api/nowhere'],
    ])('answers %s %s with 429, as every /v1/api/ request', async (method, url) => {
      const res = await service.request({ method, url, remoteAddress: ip });
      expect(res.statusCode).toBe(429);
      expect(res.json()).toMatchObject({ error: 'Too many failed authentication attempts', code: 'locked_out' });
      expect(res.headers['retry-after']).toBeDefined();
      expect(res.headers.allow).toBeUndefined();
    });

    it('still answers 405 outside /v1/api/, where the lockout does not reach', async () => {
      const res = await service.request({ method: 'POST', url: '/v1/health', remoteAddress: ip });
      expect(res.statusCode).toBe(405);
      expect(res.headers.allow).toBe('GET, HEAD');
    });
  });
});
