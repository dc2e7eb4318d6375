import { randomBytes } from 'node:crypto';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/fixtures.js';
import { startTestService, type ApiReplica, type TestService } from '../support/test-service.js';
import { keysMatching } from '../support/test-redis.js';

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
  expect(body).toEqual({ error: LOCKED_OUT, code: 'locked_out', retry_after_sec: ANY_NUMBER });
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
    let replica: ApiReplica;
    const onReplica: Inject = (options) => replica.request(options);

    beforeAll(async () => {
      replica = await service.startReplica();
    });
    afterAll(async () => {
      await replica?.close();
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

  /** `count` failed authentications, each forwarded for the next of `addresses`, from `socket`. */
  async function failForwarded(addresses: string[], count: number, socket = proxy): Promise<void> {
    for (let i = 0; i < count; i += 1) {
      const res = await service.request({
        method: 'GET',
        url: '/v1/api/me',
        headers: { ...bearer(unknownKey()), 'x-forwarded-for': addresses[i % addresses.length]! },
        remoteAddress: socket,
      });
      expect(res.statusCode).toBe(401);
    }
  }

  it('ignores forwarded values that are not addresses: they count against the socket address', async () => {
    const socket = '10.0.0.6';
    const invalid = ['garbage', '010.001.001.001', '10.1.1.1:1234', 'x'.repeat(12_000), '[2001:db8::1]'];
    await failForwarded(invalid, 20, socket);
    expectLockedOut(
      await service.request({ method: 'GET', url: '/v1/api/me', headers: { ...bearer(validKey), 'x-forwarded-for': 'other-garbage' }, remoteAddress: socket }),
    );
  });

  it('keeps every lockout key short, whatever length the header had', async () => {
    const keys = await keysMatching(service.deps.redis, `${service.config.redisPrefix}*`);
    expect(keys.length).toBeGreaterThan(0);
    expect(Math.max(...keys.map((k) => k.length))).toBeLessThan(service.config.redisPrefix.length + 80);
  });

  it('counts an IPv4-mapped IPv6 spelling and the plain IPv4 address as one client', async () => {
    await failForwarded(['::ffff:198.51.100.9', '198.51.100.9', '::FFFF:c633:6409'], 20);
    expectLockedOut(await meFrom('198.51.100.9'));
    expectLockedOut(await meFrom('::ffff:198.51.100.9'));
  });

  it('counts the spellings of one IPv6 address as one client, and locks out its whole /64', async () => {
    await failForwarded(['2001:DB8:AA:BB::1', '2001:0db8:00aa:00bb:0000:0000:0000:0001', '2001:db8:aa:bb::2', '2001:db8:aa:bb:ffff::9'], 20);
    expectLockedOut(await meFrom('2001:db8:aa:bb::1'));
    expectLockedOut(await meFrom('2001:db8:aa:bb:1234:5678:9abc:def0'));
    expect((await meFrom('2001:db8:aa:bc::1')).statusCode).toBe(200);
  });
});
