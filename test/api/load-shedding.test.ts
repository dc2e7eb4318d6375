import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, validListing, validMachine } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';

const OVERLOADED = { error: 'Service overloaded, retry shortly', retry_after_sec: 5 };

/** Blocks this process's event loop, which is the API's under app.inject. */
function blockEventLoop(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // busy on purpose
  }
}

describe('load shedding: new bulk imports get 503 while the process is overloaded', () => {
  describe('heap above OVERLOAD_HEAP_USED_MB', () => {
    let service: TestService;
    let key: string;

    beforeAll(async () => {
      // 1 MB: any process is over it, so the shedding is on from the first sample.
      service = await startTestService({ env: { OVERLOAD_HEAP_USED_MB: '1' } });
      const account = await service.createAccount();
      key = await service.createKey(account);
      // note: the first sample is taken a second after start.
      await new Promise((resolve) => setTimeout(resolve, 1_200));
    });
    afterAll(async () => {
      await service?.close();
    });

    it.each([
      ['listings', '', { listings: [validListing()] }],
      ['machines', '', { machines: [validMachine()] }],
      ['listings', '?dry_run=true', { listings: [validListing()] }],
      ['machines', '?dry_run=true', { machines: [validMachine()] }],
    ])('answers POST /v1/api/%s/bulk%s 503 "Service overloaded, retry shortly" with Retry-After, and writes nothing', async (kind, query, payload) => {
      const res = await service.request({ method: 'POST', url: `/v1/api/${kind}/bulk${query}`, headers: bearer(key), payload });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual(OVERLOADED);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.headers['x-request-id']).toBeDefined();
      const [{ n } = { n: -1 }] = await service.sql<{ n: number }[]>`select count(*)::int as n from imports`;
      expect(n).toBe(0);
    });

    it('still answers /v1/health, /v1/api/me and key management', async () => {
      expect((await service.request({ method: 'GET', url: '/v1/health' })).statusCode).toBe(200);
      expect((await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key) })).statusCode).toBe(200);
      const account = await service.createAccount();
      expect((await service.request({ method: 'GET', url: '/v1/api/keys', headers: bearer(account.sessionToken) })).statusCode).toBe(200);
    });
  });

  describe('event loop lagging beyond OVERLOAD_EVENT_LOOP_DELAY_MS', () => {
    let service: TestService;
    let key: string;

    beforeAll(async () => {
      service = await startTestService({ env: { OVERLOAD_EVENT_LOOP_DELAY_MS: '100' } });
      const account = await service.createAccount();
      key = await service.createKey(account);
    });
    afterAll(async () => {
      await service?.close();
    });

    const importOne = () => service.request({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(key), payload: { listings: [validListing()] } });

    it('sheds imports while the loop lags, keeps health up, and takes imports again once it recovers', async () => {
      expect((await importOne()).statusCode).toBe(201);
      // A loop that lags for two and a half seconds, as under a flood: it runs its timers only
      // every 200 ms, so every delay sampled in a full second is far above 100 ms. The shedding
      // is on from the first sample taken while it lags until the first one after.
      const codes: number[] = [];
      for (let i = 0; i < 12; i += 1) {
        blockEventLoop(200);
        await new Promise((resolve) => setTimeout(resolve, 0));
        if (i >= 8) codes.push((await importOne()).statusCode);
      }
      expect(codes).toContain(503);
      expect((await service.request({ method: 'GET', url: '/v1/health' })).statusCode).toBe(200);
      await expect.poll(async () => (await importOne()).statusCode, { timeout: 10_000, interval: 300 }).toBe(201);
    });
  });
});
