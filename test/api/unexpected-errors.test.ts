import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';

describe('unexpected failures (docs/errors.md#unexpected-errors)', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
  });
  afterAll(async () => {
    await service?.close();
  });

  it('answers 500 {error, request_id} with no SQL or stack in the body, and logs the error', async () => {
    const unknownKey = `svc_live_${'a'.repeat(8)}_${'b'.repeat(32)}`;
    // A table the key lookup needs goes missing: not a dependency outage, a bug-like failure.
    await service.sql`alter table api_keys rename to api_keys_away`;
    try {
      const res = await service.request({ method: 'GET', url: '/v1/api/me', headers: { ...bearer(unknownKey), 'x-request-id': 'req-500-check' } });
      expect(res.statusCode).toBe(500);
      expect(res.json()).toEqual({ error: 'Internal server error', code: 'internal_error', request_id: 'req-500-check' });
      expect(res.headers['x-request-id']).toBe('req-500-check');
      expect(res.body).not.toMatch(/api_keys|select|relation|at /i);
      expect(service.logs.some((line) => line.requestId === 'req-500-check' && line.level === 50)).toBe(true);
    } finally {
      await service.sql`alter table api_keys_away rename to api_keys`;
    }
  });
});

describe('last_used_at (docs/access.md#api-keys)', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
  });
  afterAll(async () => {
    await service?.close();
  });

  it('is set on first use and not rewritten by every request within the minute', async () => {
    const account = await service.createAccount();
    const key = await service.createKey(account);
    const lastUsed = async () =>
      (await service.sql<{ last_used_at: Date | null }[]>`select last_used_at from api_keys where account_id = ${account.id}`)[0]!.last_used_at;
    expect(await lastUsed()).toBeNull();

    expect((await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key) })).statusCode).toBe(200);
    await expect.poll(lastUsed, { timeout: 5_000, interval: 50 }).not.toBeNull();
    const first = (await lastUsed())!.getTime();

    for (let i = 0; i < 5; i += 1) {
      expect((await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key) })).statusCode).toBe(200);
    }
    // Any write would have been issued by now; give it time to land before checking.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await lastUsed())!.getTime()).toBe(first);
  });
});
