import { randomBytes } from 'node:crypto';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/api/app.js';
import { createApiDeps } from '../../src/api/deps.js';
import { bearer } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';

const ANY_NUMBER: unknown = expect.any(Number);

const LOCKED_OUT = 'Too many failed authentication attempts';

/** A key in the documented format that was never issued: a failed authentication (401). */
function unknownKey(): string {
  return `svc_live_${randomBytes(4).toString('hex')}_${randomBytes(16).toString('hex')}`;
}

type Inject = (options: InjectOptions) => Promise<LightMyRequestResponse>;

/** Sends `count` requests with unknown keys, one after another, and returns their statuses. */
async function failAuth(send: Inject, count: number, options: Partial<InjectOptions> = {}): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const res = await send({ method: 'GET', url: '/v1/api/me', headers: bearer(unknownKey()), ...options });
    statuses.push(res.statusCode);
  }
  return statuses;
}

function expectLockedOut(res: LightMyRequestResponse): void {
  expect(res.statusCode).toBe(429);
  const body = res.json<{ error: string; retry_after_sec: number }>();
  expect(body).toEqual({ error: LOCKED_OUT, retry_after_sec: ANY_NUMBER });
  expect(res.headers['retry-after']).toBe(String(body.retry_after_sec));
}

describe('failed-authentication lockout per IP', () => {
  let service: TestService;
  let validKey: string;
  const send: Inject = (options) => service.request(options);

  beforeAll(async () => {
    service = await startTestService({ worker: false });
    const account = await service.createAccount();
    validKey = await service.createKey(account, ['listings:write']);
  });
  afterAll(async () => {
    await service?.close();
  });

  const meWithValidKey = (remoteAddress: string) =>
    service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(validKey), remoteAddress });

  describe('after 20 failed authentications from 203.0.113.7', () => {
    const ip = '203.0.113.7';
    let failures: number[];

    beforeAll(async () => {
      failures = await failAuth(send, 20, { remoteAddress: ip });
    });

    it('answered each of the 20 failures with 401', () => {
      expect(failures).toEqual(Array(20).fill(401));
    });

    it('answers the 21st request, with a valid key, with 429 and a Retry-After of about 15 minutes', async () => {
      const res = await meWithValidKey(ip);
      expectLockedOut(res);
      const { retry_after_sec } = res.json<{ retry_after_sec: number }>();
      expect(retry_after_sec).toBeGreaterThan(840);
      expect(retry_after_sec).toBeLessThanOrEqual(900);
    });

    it('locks out the bulk routes and key management too', async () => {
      const bulk = await service.request({
        method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(validKey), payload: { listings: [] }, remoteAddress: ip,
      });
      expectLockedOut(bulk);
      const keys = await service.request({ method: 'GET', url: '/v1/api/keys', remoteAddress: ip });
      expectLockedOut(keys);
    });

    it('answers an unknown route under /v1/api/ from the locked IP with 429', async () => {
      expectLockedOut(await service.request({ method: 'GET', url: '/v1/api/no-such-route', remoteAddress: ip }));
    });

    it('still answers GET /v1/health from the locked IP with 200', async () => {
      const res = await service.request({ method: 'GET', url: '/v1/health', remoteAddress: ip });
      expect(res.statusCode).toBe(200);
    });

    it('leaves another IP unaffected', async () => {
      const res = await meWithValidKey('203.0.113.8');
      expect(res.statusCode).toBe(200);
    });
  });

  it('does not lock out after 19 failures', async () => {
    const ip = '203.0.113.19';
    expect(await failAuth(send, 19, { remoteAddress: ip })).toEqual(Array(19).fill(401));
    expect((await meWithValidKey(ip)).statusCode).toBe(200);
  });

  it('counts malformed keys as failures', async () => {
    const ip = '203.0.113.20';
    for (let i = 0; i < 20; i += 1) {
      const res = await service.request({ method: 'GET', url: '/v1/api/me', headers: { authorization: 'Basic xyz' }, remoteAddress: ip });
      expect(res.statusCode).toBe(401);
    }
    expectLockedOut(await meWithValidKey(ip));
  });

  it('counts session-token 401s on /v1/api/keys as failures', async () => {
    const ip = '203.0.113.21';
    for (let i = 0; i < 20; i += 1) {
      const res = await service.request({
        method: 'GET',
        url: '/v1/api/keys',
        headers: bearer(i % 2 === 0 ? 'not-a-jwt' : 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl'),
        remoteAddress: ip,
      });
      expect(res.statusCode).toBe(401);
    }
    expectLockedOut(await meWithValidKey(ip));
  });

  describe('shared by API replicas', () => {
    let replica: FastifyInstance;
    let closeReplica: () => Promise<void>;
    const onReplica: Inject = (options) => replica.inject(options);

    beforeAll(async () => {
      // A second API process on the same database and Redis, as a scaled deployment runs it.
      const deps = await createApiDeps(service.config, service.deps.log);
      replica = await buildApp(deps);
      await replica.ready();
      closeReplica = async () => {
        await replica.close();
        await deps.close();
      };
    });
    afterAll(async () => {
      await closeReplica?.();
    });

    it('locks an IP out on the second replica after 20 failures on the first', async () => {
      const ip = '203.0.113.30';
      expect(await failAuth(send, 20, { remoteAddress: ip })).toEqual(Array(20).fill(401));
      expectLockedOut(await onReplica({ method: 'GET', url: '/v1/api/me', headers: bearer(validKey), remoteAddress: ip }));
    });

    it('adds up failures seen by different replicas (10 + 10)', async () => {
      const ip = '203.0.113.31';
      expect(await failAuth(send, 10, { remoteAddress: ip })).toEqual(Array(10).fill(401));
      expect(await failAuth(onReplica, 10, { remoteAddress: ip })).toEqual(Array(10).fill(401));
      expectLockedOut(await meWithValidKey(ip));
      expectLockedOut(await onReplica({ method: 'GET', url: '/v1/api/me', headers: bearer(validKey), remoteAddress: ip }));
    });
  });

  describe('client IP without TRUST_PROXY', () => {
    it('ignores X-Forwarded-For: 20 failures with different forwarded addresses lock out the socket address', async () => {
      const socket = '203.0.113.40';
      for (let i = 0; i < 20; i += 1) {
        const res = await service.request({
          method: 'GET',
          url: '/v1/api/me',
          headers: { ...bearer(unknownKey()), 'x-forwarded-for': `198.51.100.${i + 1}` },
          remoteAddress: socket,
        });
        expect(res.statusCode).toBe(401);
      }
      expectLockedOut(
        await service.request({
          method: 'GET', url: '/v1/api/me', headers: { ...bearer(validKey), 'x-forwarded-for': '198.51.100.200' }, remoteAddress: socket,
        }),
      );
    });

    it('does not lock out a socket address named only in X-Forwarded-For', async () => {
      const named = '203.0.113.41';
      expect(
        await failAuth(send, 20, { remoteAddress: '203.0.113.42', headers: { ...bearer(unknownKey()), 'x-forwarded-for': named } }),
      ).toEqual(Array(20).fill(401));
      expect((await meWithValidKey(named)).statusCode).toBe(200);
    });
  });
});

describe('failed-authentication lockout with TRUST_PROXY=true', () => {
  let service: TestService;
  let validKey: string;
  const proxy = '10.0.0.5';

  beforeAll(async () => {
    service = await startTestService({ worker: false, env: { TRUST_PROXY: 'true' } });
    const account = await service.createAccount();
    validKey = await service.createKey(account, ['listings:write']);
    for (let i = 0; i < 20; i += 1) {
      const res = await service.request({
        method: 'GET',
        url: '/v1/api/me',
        headers: { ...bearer(unknownKey()), 'x-forwarded-for': '198.51.100.1' },
        remoteAddress: proxy,
      });
      expect(res.statusCode).toBe(401);
    }
  });
  afterAll(async () => {
    await service?.close();
  });

  const meFrom = (forwardedFor: string) =>
    service.request({
      method: 'GET', url: '/v1/api/me', headers: { ...bearer(validKey), 'x-forwarded-for': forwardedFor }, remoteAddress: proxy,
    });

  it('locks out the forwarded client address 198.51.100.1', async () => {
    expectLockedOut(await meFrom('198.51.100.1'));
  });

  it('does not lock out 198.51.100.2 behind the same proxy', async () => {
    expect((await meFrom('198.51.100.2')).statusCode).toBe(200);
  });
});
