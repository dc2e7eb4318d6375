import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFaultScenario, type FaultScenario } from '../support/fault-scenario.js';
import type { ApiProcess } from '../support/processes.js';

/**
 * A key's end and allowed addresses across two real API processes (docs/access.md#key-lifecycle):
 * a change made through one applies on the very next request to the other, whatever key the
 * other holds in its cache, and a roll's end applies on both from its instant.
 */
describe('two API processes, a key rolled and restricted', () => {
  let scenario: FaultScenario;
  let apis: ApiProcess[];
  let partner: Awaited<ReturnType<FaultScenario['addPartner']>>;

  beforeAll(async () => {
    scenario = await createFaultScenario();
    apis = await Promise.all([scenario.startApi(), scenario.startApi()]);
    partner = await scenario.addPartner();
  });
  afterAll(async () => {
    await scenario?.close();
  });

  const me = async (api: ApiProcess, key: string) => {
    const res = await fetch(`${api.baseUrl}/v1/api/me`, { headers: { authorization: `Bearer ${key}` } });
    return { status: res.status, body: (await res.json()) as { code?: string } };
  };
  const onBoth = async (key: string) => Promise.all(apis.map((api) => me(api, key)));
  const manage = async (api: ApiProcess, method: 'POST' | 'PATCH', path: string, body: object) => {
    const res = await fetch(`${api.baseUrl}/v1/api/keys/${path}`, {
      method,
      headers: { authorization: `Bearer ${partner.sessionToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it('refuse the key on the other process at once when its addresses change, and let it in again once they allow it', async () => {
    const [first, second] = apis as [ApiProcess, ApiProcess];
    expect((await onBoth(partner.apiKey)).map((r) => r.status)).toEqual([200, 200]);
    expect((await manage(first, 'PATCH', partner.keyId, { allowed_ips: ['203.0.113.0/24'] })).status).toBe(200);
    const refused = await me(second, partner.apiKey);
    expect([refused.status, refused.body.code]).toEqual([403, 'ip_not_allowed']);
    // the test's requests come from the loopback address, IPv4 or IPv6
    expect((await manage(second, 'PATCH', partner.keyId, { allowed_ips: ['127.0.0.0/8', '::1'] })).status).toBe(200);
    expect((await me(first, partner.apiKey)).status).toBe(200);
  });

  it('keep the old key of a roll working on both through its grace period, and refuse it on both once it ends', async () => {
    const [first, second] = apis as [ApiProcess, ApiProcess];
    const rolled = await manage(first, 'POST', `${partner.keyId}/roll`, { expires_in_sec: 2 });
    expect(rolled.status).toBe(201);
    const newKey = rolled.body['key'] as string;
    expect(rolled.body['allowed_ips']).toEqual(['127.0.0.0/8', '::1']);
    expect((await onBoth(partner.apiKey)).map((r) => r.status)).toEqual([200, 200]);
    expect((await onBoth(newKey)).map((r) => r.status)).toEqual([200, 200]);
    const ends = new Date((rolled.body['rolled'] as { expires_at: string }).expires_at).getTime();
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, ends - Date.now() + 50)));
    expect((await onBoth(partner.apiKey)).map((r) => [r.status, r.body.code])).toEqual([
      [401, 'api_key_expired'],
      [401, 'api_key_expired'],
    ]);
    // and a roll with no grace, through the other process, ends the new key on the first at once
    const keyId = (rolled.body['metadata'] as { id: string }).id;
    expect((await onBoth(newKey)).map((r) => r.status)).toEqual([200, 200]);
    expect((await manage(second, 'POST', `${keyId}/roll`, { expires_in_sec: 0 })).status).toBe(201);
    expect((await me(first, newKey)).body.code).toBe('api_key_expired');
  });
});
