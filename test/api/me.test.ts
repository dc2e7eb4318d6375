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
});
