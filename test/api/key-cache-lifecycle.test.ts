import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * A cached key carries its end and its allowed addresses (docs/access.md#key-lifecycle): the
 * checks run on what the cache holds, with no PostgreSQL read per request. Shown by changing the
 * table with its triggers off, so nothing tells the API: the answers still follow the cached key.
 */
describe('API-key cache and the key\'s end and addresses (GET /v1/api/me)', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
  });
  afterAll(async () => {
    await service?.close();
  });

  const me = (key: string, remoteAddress: string) => service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key), remoteAddress });

  /** Changes the tables with triggers off, so no NOTIFY reaches the API. */
  async function silently(run: (sql: TestService['sql']) => Promise<unknown>): Promise<void> {
    await service.sql.begin(async (tx) => {
      await tx`set local session_replication_role = replica`;
      await run(tx as unknown as TestService['sql']);
    });
  }

  async function createKey(payload: object): Promise<{ key: string; id: string }> {
    const account = await service.createAccount();
    const res = await service.request({ method: 'POST', url: '/v1/api/keys', headers: bearer(account.sessionToken), payload: { label: 'k', scopes: ['listings:write'], ...payload } });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json<{ key: string; metadata: { id: string } }>();
    return { key: body.key, id: body.metadata.id };
  }

  it('refuses an address from the cached list without reading the key again, until the auth version moves', async () => {
    const { key, id } = await createKey({ allowed_ips: ['198.51.100.7'] });
    expect((await me(key, '198.51.100.7')).statusCode).toBe(200);
    await silently((sql) => sql`update api_keys set allowed_ips = null where id = ${id}`);
    expect((await me(key, '192.0.2.1')).statusCode).toBe(403);
    await service.deps.authVersion.bump();
    expect((await me(key, '192.0.2.2')).statusCode).toBe(200);
  });

  it('ends a cached key at the end it was loaded with, though nothing told the API of any change', async () => {
    const { key, id } = await createKey({});
    const [row] = await service.sql<{ ends: Date }[]>`update api_keys set expires_at = now() + interval '1 second' where id = ${id} returning expires_at as ends`;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await me(key, '198.51.100.7')).statusCode).toBe(200);
    // The table now says the key runs for a year; the cache still holds the end it loaded.
    await silently((sql) => sql`update api_keys set expires_at = now() + interval '365 days' where id = ${id}`);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, row!.ends.getTime() - Date.now() + 20)));
    expect((await me(key, '198.51.100.7')).json()).toEqual({ error: 'Invalid API key', code: 'api_key_expired' });
    await service.deps.authVersion.bump();
    expect((await me(key, '198.51.100.7')).statusCode).toBe(200);
  });
});
