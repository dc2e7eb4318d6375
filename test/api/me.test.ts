import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';

describe('GET /v1/api/me', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
  });
  afterAll(async () => {
    await service?.close();
  });

  it('returns the account and the key in use, scopes in colon form', async () => {
    const account = await service.createAccount({ name: 'Acme Prints', tier: 'global', isOwner: true, onboarded: false });
    const key = await service.createKey(account, ['listings_write', 'jobs:read']);
    const res = await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key) });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      id: account.id,
      display_name: 'Acme Prints',
      subscription_tier: 'global',
      is_owner: true,
      has_completed_onboarding: false,
      key: { prefix: key.slice(9, 17), scopes: ['listings:write', 'jobs:read'], expires_at: null, allowed_ips: null },
    });
  });

  it('answers the key as it is now on the very next request after it changed (its answer is kept per cached key)', async () => {
    const account = await service.createAccount({ tier: 'global' });
    const key = await service.createKey(account, ['listings:write']);
    const me = async () => (await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key), remoteAddress: '127.0.0.1' })).json<{ key: { allowed_ips: string[] | null } }>();
    expect((await me()).key.allowed_ips).toBeNull();
    expect((await me()).key.allowed_ips).toBeNull();
    const listed = await service.request({ method: 'GET', url: '/v1/api/keys', headers: bearer(account.sessionToken) });
    const { id } = listed.json<{ keys: { id: string }[] }>().keys[0]!;
    const patched = await service.request({ method: 'PATCH', url: `/v1/api/keys/${id}`, headers: bearer(account.sessionToken), payload: { allowed_ips: ['127.0.0.1'] } });
    expect(patched.statusCode).toBe(200);
    expect((await me()).key.allowed_ips).toEqual(['127.0.0.1']);
  });
});
