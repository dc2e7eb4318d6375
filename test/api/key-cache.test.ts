import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * The API caches authenticated keys; two mechanisms keep the cache honest: the auth version in
 * Redis (bumped by the service after a revocation or a tier change) and the database's NOTIFY
 * (for changes made directly in the tables). Each is tested on its own here.
 */
describe('API-key cache (GET /v1/api/me)', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
  });
  afterAll(async () => {
    await service?.close();
  });

  const me = (key: string) => service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key) });

  /** Changes the tables with triggers off, so no NOTIFY reaches the API. */
  async function silently(run: (sql: TestService['sql']) => Promise<unknown>): Promise<void> {
    await service.sql.begin(async (tx) => {
      await tx`set local session_replication_role = replica`;
      await run(tx as unknown as TestService['sql']);
    });
  }

  it('serves a cached key without reading it again, until the auth version moves', async () => {
    const account = await service.createAccount();
    const key = await service.createKey(account);
    expect((await me(key)).statusCode).toBe(200);

    await silently((sql) => sql`update api_keys set is_revoked = true, revoked_at = now() where account_id = ${account.id}`);
    // Nothing told the API: the cached key still works, which shows the cache is used.
    expect((await me(key)).statusCode).toBe(200);

    await service.deps.authVersion.bump();
    const res = await me(key);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: 'Invalid API key', code: 'invalid_api_key' });
  });

  it('applies a tier changed through the auth version on the very next request', async () => {
    const account = await service.createAccount({ tier: 'enterprise' });
    const key = await service.createKey(account);
    expect((await me(key)).statusCode).toBe(200);

    await silently((sql) => sql`update accounts set subscription_tier = 'pro' where id = ${account.id}`);
    await service.deps.authVersion.bump();
    expect((await me(key)).statusCode).toBe(402);
  });

  it('drops cached keys when a key is revoked directly in the table (database notification)', async () => {
    const account = await service.createAccount();
    const key = await service.createKey(account);
    expect((await me(key)).statusCode).toBe(200);

    await service.sql`update api_keys set is_revoked = true, revoked_at = now() where account_id = ${account.id}`;
    await expect.poll(async () => (await me(key)).statusCode, { timeout: 5_000, interval: 50 }).toBe(401);
  });

  it('applies a tier changed directly in the table without the service being told (database notification)', async () => {
    const account = await service.createAccount({ tier: 'global' });
    const key = await service.createKey(account);
    expect((await me(key)).headers['x-ratelimit-limit-minute']).toBe('1000');

    await service.sql`update accounts set subscription_tier = 'free' where id = ${account.id}`;
    await expect.poll(async () => (await me(key)).statusCode, { timeout: 5_000, interval: 50 }).toBe(402);
  });
});
