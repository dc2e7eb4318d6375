import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { AccountQuota } from '../../../src/api/limits/account-quota.js';
import { IDLE_MS, MAX_LEASE } from '../../../src/api/limits/quota-leases.js';
import { testRedisPrefix } from '../../support/test-database.js';
import { testRedisClient } from '../../support/test-redis.js';

/**
 * The quota as two API replicas count it on one real Redis (a single server, or the cluster of
 * `npm run test:cluster`): each replica spends shares of an account's windows locally, and the
 * two together never grant more than the limit.
 */
describe('AccountQuota with shares, on two replicas', () => {
  const redis = testRedisClient();
  const prefix = testRedisPrefix();
  const replicas: AccountQuota[] = [];
  const replica = () => {
    const quota = new AccountQuota(redis, prefix);
    replicas.push(quota);
    return quota;
  };
  afterAll(async () => {
    await Promise.all(replicas.map((q) => q.close()));
    redis.disconnect();
  });

  /** The account's minute window as Redis counts it (rate-limiter-flexible's key). */
  const minuteInRedis = async (accountId: string) => Number(await redis.get(`${prefix}:quota-minute:${accountId}`));

  const allowed = async (quota: AccountQuota, accountId: string) => quota.decide(await quota.count(accountId, 'enterprise'), 'enterprise');

  it('counts one replica\'s requests exactly (remaining 299, 298, ...) while Redis holds a share beyond them, given back on close', async () => {
    const quota = new AccountQuota(redis, prefix);
    const accountId = randomUUID();
    const remaining: number[] = [];
    for (let i = 0; i < 40; i += 1) remaining.push((await allowed(quota, accountId)).minute.remaining);
    expect(remaining).toEqual(Array.from({ length: 40 }, (_, i) => 299 - i));
    const counted = await minuteInRedis(accountId);
    // a share was reserved: Redis counted more than the 40 requests, at most one share more
    expect(counted).toBeGreaterThan(40);
    expect(counted).toBeLessThanOrEqual(40 + MAX_LEASE);
    await quota.close();
    expect(await minuteInRedis(accountId)).toBe(40);
  });

  it('never grants more than the limit across both, and grants all of it: 300 of 1,000 requests sent to either at random', async () => {
    const [a, b] = [replica(), replica()];
    const accountId = randomUUID();
    let passed = 0;
    for (let i = 0; i < 1_000; i += 1) {
      const decision = await allowed(Math.random() < 0.5 ? a : b, accountId);
      if (decision.exceeded === undefined) passed += 1;
      expect(passed).toBeLessThanOrEqual(300);
    }
    expect(passed).toBe(300);
  });

  it(`refuses at most one share early in a burst on both at once, and holds nothing back ${IDLE_MS} ms after it`, async () => {
    const [a, b] = [replica(), replica()];
    const accountId = randomUUID();
    // warm both, so that each holds a share before the burst
    for (let i = 0; i < 20; i += 1) await allowed(i % 2 === 0 ? a : b, accountId);
    const burst = await Promise.all(Array.from({ length: 330 }, (_, i) => allowed(i % 2 === 0 ? a : b, accountId)));
    const passed = 20 + burst.filter((d) => d.exceeded === undefined).length;
    const refused = burst.length + 20 - passed;
    expect(passed).toBeLessThanOrEqual(300);
    // a share the other replica held when the window filled was counted, and not spent
    expect(passed).toBeGreaterThanOrEqual(300 - MAX_LEASE);
    // note: a refused request stays counted in its minute, as without shares
    await expect.poll(() => minuteInRedis(accountId), { timeout: IDLE_MS * 3, interval: 100 }).toBe(passed + refused);
  });
});
