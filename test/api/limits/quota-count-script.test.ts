import { randomUUID } from 'node:crypto';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { afterAll, describe, expect, it } from 'vitest';
import { QuotaCountScript, type QuotaGate, type QuotaKeys } from '../../../src/api/limits/quota-count-script.js';
import { testRedisPrefix } from '../../support/test-database.js';
import { testRedisClient } from '../../support/test-redis.js';

/**
 * The script that counts both quota windows in one command keeps rate-limiter-flexible's keys,
 * values and expiries (the quota stays the library's, whichever counts a request), and counts
 * nothing when the request's gate refuses it.
 */
describe('QuotaCountScript', () => {
  const redis = testRedisClient();
  const prefix = testRedisPrefix();
  const script = new QuotaCountScript(redis);
  const limiter = (window: string, duration: number) => new RateLimiterRedis({ storeClient: redis, keyPrefix: `${prefix}:${window}`, points: 1_000_000, duration });
  afterAll(() => redis.disconnect());

  /** Two accounts' windows, one counted by the library, one by the script. */
  const pair = () => {
    const [minute, day] = [limiter('quota-minute', 60), limiter('quota-day', 86_400)];
    const [library, ours] = [randomUUID(), randomUUID()];
    const keys = (account: string): QuotaKeys => ({ minuteKey: minute.getKey(account), dayKey: day.getKey(account), minuteSec: 60, daySec: 86_400 });
    return { minute, day, library, ours, libraryKeys: keys(library), ourKeys: keys(ours) };
  };

  const stateOf = async (key: string) => ({ value: await redis.get(key), ttlMs: await redis.pttl(key) });

  it.each([
    { state: 'no key yet (a window starts)', before: async () => undefined },
    { state: 'a window with 30 s and 7 requests left', before: async (key: string) => void (await redis.set(key, '7', 'PX', 30_000)) },
    { state: 'a count without an expiry (it gets one)', before: async (key: string) => void (await redis.set(key, '7')) },
  ])('counts as rate-limiter-flexible does from $state', async ({ before }) => {
    const { minute, day, library, libraryKeys, ourKeys } = pair();
    for (const key of [libraryKeys.minuteKey, libraryKeys.dayKey, ourKeys.minuteKey, ourKeys.dayKey]) await before(key);
    const [byLibrary, byDay] = [await minute.consume(library, 3), await day.consume(library, 3)];
    const counted = await script.count(ourKeys, 3);
    expect(counted.minute.count).toBe(byLibrary.consumedPoints);
    expect(counted.day.count).toBe(byDay.consumedPoints);
    expect(Math.abs(counted.minute.msBeforeNext - byLibrary.msBeforeNext)).toBeLessThan(1_000);
    expect(Math.abs(counted.day.msBeforeNext - byDay.msBeforeNext)).toBeLessThan(1_000);
    for (const [theirs, mine] of [[libraryKeys.minuteKey, ourKeys.minuteKey], [libraryKeys.dayKey, ourKeys.dayKey]] as const) {
      const [a, b] = [await stateOf(theirs), await stateOf(mine)];
      expect(b.value).toBe(a.value);
      expect(b.ttlMs).toBeGreaterThan(0);
      expect(Math.abs(b.ttlMs - a.ttlMs)).toBeLessThan(1_000);
    }
  });

  it('adds to the count the library reads, and the library\'s counts to its own', async () => {
    const { minute, ours, ourKeys } = pair();
    await minute.consume(ours, 2);
    expect((await script.count(ourKeys, 1)).minute.count).toBe(3);
    expect((await minute.get(ours))?.consumedPoints).toBe(3);
  });

  describe('behind a gate', () => {
    const gateOf = (version: string, failures = 20): QuotaGate => ({
      failureKey: `${prefix}:auth-failures:${randomUUID()}`,
      lockoutAt: failures,
      versionKey: `${prefix}:auth-version`,
      version,
    });

    it('counts when the client is not locked out and the version is the cached one (none yet: "0")', async () => {
      const { ourKeys } = pair();
      const counted = await script.countBehind(gateOf('0'), ourKeys, 1);
      expect(counted).toMatchObject({ outcome: 'counted', minute: { count: 1 }, day: { count: 1 } });
    });

    it('counts nothing for a locked-out client, and says how long the lockout has left', async () => {
      const { ourKeys } = pair();
      const gate = gateOf('0');
      await redis.set(gate.failureKey, '21', 'PX', 900_000);
      const refused = await script.countBehind(gate, ourKeys, 1);
      expect(refused).toMatchObject({ outcome: 'locked' });
      expect(refused.outcome === 'locked' && refused.msLeft).toBeGreaterThan(899_000);
      expect(await redis.exists(ourKeys.minuteKey, ourKeys.dayKey)).toBe(0);
    });

    it('counts a client below the lockout', async () => {
      const { ourKeys } = pair();
      const gate = gateOf('0');
      await redis.set(gate.failureKey, '19', 'PX', 300_000);
      expect((await script.countBehind(gate, ourKeys, 1)).outcome).toBe('counted');
    });

    it('counts nothing for a key cached under an older version, and gives the version now', async () => {
      const { ourKeys } = pair();
      const versionKey = `${prefix}:auth-version-${randomUUID()}`;
      await redis.set(versionKey, 'after-a-revocation');
      const refused = await script.countBehind({ ...gateOf('before-it'), versionKey }, ourKeys, 1);
      expect(refused).toEqual({ outcome: 'stale', version: 'after-a-revocation' });
      expect(await redis.exists(ourKeys.minuteKey, ourKeys.dayKey)).toBe(0);
    });
  });
});
