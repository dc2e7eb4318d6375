import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/fixtures.js';
import { startTestService, type ApiReplica, type TestAccount, type TestService } from '../support/test-service.js';

/**
 * A key's end and its allowed addresses on two API replicas (docs/access.md#key-lifecycle): each
 * takes effect on the very next request to either, whatever key the other has cached.
 */

const EXPIRED = { error: 'Invalid API key', code: 'api_key_expired' };
const NOT_ALLOWED = { error: 'API key not allowed from this address', code: 'ip_not_allowed' };

describe('two API replicas, a key\'s end and addresses', () => {
  let service: TestService;
  let replica: ApiReplica;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
    replica = await service.startReplica();
  });
  afterAll(async () => {
    await replica?.close();
    await service?.close();
  });

  const both = (options: InjectOptions) => Promise.all([service.request(options), replica.request(options)]);
  const me = (key: string, remoteAddress = '198.51.100.7') => both({ method: 'GET', url: '/v1/api/me', headers: bearer(key), remoteAddress });
  const statusesOf = (replies: { statusCode: number }[]) => replies.map((r) => r.statusCode);

  async function createKey(account: TestAccount, extra: object = {}): Promise<{ key: string; id: string }> {
    const res = await service.request({ method: 'POST', url: '/v1/api/keys', headers: bearer(account.sessionToken), payload: { label: 'sync', scopes: ['listings:write'], ...extra } });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json<{ key: string; metadata: { id: string } }>();
    return { key: body.key, id: body.metadata.id };
  }

  it('refuse a key whose end passes, on both, from the key each has cached', async () => {
    const account = await service.createAccount();
    const { key, id } = await createKey(account);
    // note: the end is set in the table before either replica first loads the key, so both
    // cache a key that carries it; nothing is notified when the instant passes.
    const [row] = await service.sql<{ ends: Date }[]>`update api_keys set expires_at = now() + interval '1500 milliseconds' where id = ${id} returning expires_at as ends`;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(statusesOf(await me(key))).toEqual([200, 200]);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, row!.ends.getTime() - Date.now() + 20)));
    const refused = await me(key);
    expect(refused.map((r) => [r.statusCode, r.json()])).toEqual([
      [401, EXPIRED],
      [401, EXPIRED],
    ]);
  });

  it('refuse the old key of a roll with expires_in_sec 0 on the very next request to the other replica', async () => {
    const account = await service.createAccount();
    const { key, id } = await createKey(account);
    expect(statusesOf(await me(key))).toEqual([200, 200]);
    const rolled = await replica.request({ method: 'POST', url: `/v1/api/keys/${id}/roll`, headers: bearer(account.sessionToken), payload: { expires_in_sec: 0 } });
    expect(rolled.statusCode).toBe(201);
    const refused = await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key), remoteAddress: '198.51.100.7' });
    expect([refused.statusCode, refused.json()]).toEqual([401, EXPIRED]);
    expect(statusesOf(await me(rolled.json<{ key: string }>().key))).toEqual([200, 200]);
  });

  it('keep the old key of a roll working through its grace period on both, and refuse it on both once it ends', async () => {
    const account = await service.createAccount();
    const { key, id } = await createKey(account);
    expect(statusesOf(await me(key))).toEqual([200, 200]);
    const rolled = await service.request({ method: 'POST', url: `/v1/api/keys/${id}/roll`, headers: bearer(account.sessionToken), payload: { expires_in_sec: 2 } });
    expect(rolled.statusCode).toBe(201);
    expect(statusesOf(await me(key))).toEqual([200, 200]);
    const ends = new Date(rolled.json<{ rolled: { expires_at: string } }>().rolled.expires_at).getTime();
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, ends - Date.now() + 20)));
    expect(statusesOf(await me(key))).toEqual([401, 401]);
  });

  it('apply a change of allowed addresses made through one replica on the very next request to the other', async () => {
    const account = await service.createAccount();
    const { key, id } = await createKey(account);
    expect(statusesOf(await me(key, '198.51.100.7'))).toEqual([200, 200]);
    const changed = await service.request({ method: 'PATCH', url: `/v1/api/keys/${id}`, headers: bearer(account.sessionToken), payload: { allowed_ips: ['203.0.113.0/24'] } });
    expect(changed.statusCode).toBe(200);
    const refused = await replica.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key), remoteAddress: '198.51.100.7' });
    expect([refused.statusCode, refused.json()]).toEqual([403, NOT_ALLOWED]);
    expect(statusesOf(await me(key, '203.0.113.40'))).toEqual([200, 200]);
    // and back: null allows any address again, on the other replica at once
    await replica.request({ method: 'PATCH', url: `/v1/api/keys/${id}`, headers: bearer(account.sessionToken), payload: { allowed_ips: null } });
    const allowed = await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key), remoteAddress: '198.51.100.7' });
    expect(allowed.statusCode).toBe(200);
  });

  it('apply a change of allowed addresses made directly in the table (the database notifies both)', async () => {
    const account = await service.createAccount();
    const { key, id } = await createKey(account);
    expect(statusesOf(await me(key, '198.51.100.7'))).toEqual([200, 200]);
    await service.sql`update api_keys set allowed_ips = ${['203.0.113.0/24']}::text[] where id = ${id}`;
    await expect.poll(async () => statusesOf(await me(key, '198.51.100.7')), { timeout: 2_000, interval: 50 }).toEqual([403, 403]);
  });
});
