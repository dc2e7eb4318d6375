import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { AccountQuota } from '../../../src/api/limits/account-quota.js';
import { HOT_AFTER, MAX_LEASE } from '../../../src/api/limits/quota-leases.js';
import { TIER_LIMITS } from '../../../src/shared/access/tiers.js';
import type { RedisClient } from '../../../src/shared/infra/redis.js';
import { testRedisPrefix } from '../../support/test-database.js';
import { testRedisClient } from '../../support/test-redis.js';

/** Windows short enough to see several end within a test; the day's stays as long as ever. */
const WINDOWS = { minuteSec: 2, daySec: 24 * 60 * 60 };
const LIMIT = TIER_LIMITS.enterprise.perMinute;
/** how long the event loop is held while an answer from Redis waits to be read */
const LAG_MS = 600;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));
const sleepUntil = (at: number) => sleep(at - Date.now());

/** Holds the event loop, as a long synchronous task does: answers from Redis wait meanwhile. */
function holdEventLoop(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // note: nothing else of this process runs meanwhile
  }
}

/** A window of an account's minute as Redis counts it: [startsAt, endsAt], on Redis's clock (the test's). */
interface RedisWindow {
  startsAt: number;
  endsAt: number;
}

/** A request a replica let through: it was admitted somewhere between `from` and `to`. */
interface Admission {
  from: number;
  to: number;
}

/**
 * Two API replicas counting one account on one real Redis, each with its own connection, while
 * the minute windows end under them (2 s windows), and an event loop held long enough that an
 * answer from Redis is read well after Redis wrote it.
 */
describe('AccountQuota at the ends of its windows, on two replicas', () => {
  const prefix = testRedisPrefix();
  const clients: RedisClient[] = [];
  const replicas: AccountQuota[] = [];
  const client = () => {
    const redis = testRedisClient();
    clients.push(redis);
    return redis;
  };
  /** A replica on a connection of its own, connected: its first command leaves when it is sent. */
  const replica = async () => {
    const redis = client();
    await redis.ping();
    const quota = new AccountQuota(redis, prefix, WINDOWS);
    replicas.push(quota);
    return { quota, redis };
  };
  const observer = client();
  afterAll(async () => {
    await Promise.all(replicas.map((q) => q.close()));
    for (const redis of clients) redis.disconnect();
  });

  const minuteKey = (accountId: string) => `${prefix}:quota-minute:${accountId}`;
  const dayKey = (accountId: string) => `${prefix}:quota-day:${accountId}`;

  /** A key's count and when it expires, in one step: [count or null, PEXPIRETIME]. */
  async function readKey(key: string): Promise<{ count: number | null; expiresAt: number }> {
    // note: a missing key's nil becomes false in Lua, and null in the reply
    const [count, expiresAt] = (await observer.eval("return {redis.call('GET', KEYS[1]), redis.call('PEXPIRETIME', KEYS[1])}", 1, key)) as [string | null, number];
    return { count: count === null ? null : Number(count), expiresAt };
  }

  /**
   * Watches an account's minute key: every window it had (a key expires when its window ends;
   * the next starts with the next request), and every count it held.
   */
  function watchMinute(accountId: string) {
    const windows = new Map<number, RedisWindow>();
    const counts: number[] = [];
    const look = async (): Promise<RedisWindow | undefined> => {
      const { count, expiresAt } = await readKey(minuteKey(accountId));
      if (count === null) return undefined;
      counts.push(count);
      // note: Redis's key lives until the millisecond it expires at, included
      const window = { startsAt: expiresAt - WINDOWS.minuteSec * 1000, endsAt: expiresAt };
      windows.set(expiresAt, window);
      return window;
    };
    const timer = setInterval(() => void look().catch(() => undefined), 10);
    return {
      windows,
      counts,
      look,
      /** the window on now, read from Redis */
      async current(): Promise<RedisWindow> {
        const window = await look();
        if (window === undefined) throw new Error('the account has no minute window on');
        return window;
      },
      stop: () => clearInterval(timer),
    };
  }

  /** Counts one request on the replica and keeps when it was let through, if it was. */
  async function send(quota: AccountQuota, accountId: string, admitted: Admission[]): Promise<void> {
    const from = Date.now();
    const decision = quota.decide(await quota.count(accountId, 'enterprise'), 'enterprise');
    if (decision.exceeded === undefined) admitted.push({ from, to: Date.now() });
  }

  /**
   * Each admission in the window that surely held it, or in `outside` when it surely happened
   * while no window was on. note: Date.now() and Redis's clock are the same clock here, both in
   * whole milliseconds: an admission counts for a window only when the whole of its interval is
   * inside it; one that straddles an edge counts nowhere, so the tallies below are never high.
   */
  function tally(admitted: Admission[], windows: RedisWindow[]): { perWindow: number[]; outside: Admission[] } {
    const perWindow = windows.map(() => 0);
    const outside: Admission[] = [];
    for (const a of admitted) {
      const inside = windows.findIndex((w) => w.startsAt < a.from && a.to < w.endsAt);
      if (inside >= 0) perWindow[inside]! += 1;
      else if (windows.every((w) => a.to < w.startsAt || a.from > w.endsAt + 1)) outside.push(a);
    }
    return { perWindow, outside };
  }

  it(
    `never lets more than the limit through in a window as Redis counts it, nor any request between windows, when a replica read its first answer of a window ${LAG_MS} ms late`,
    async () => {
      const [{ quota: a }, { quota: b }] = [await replica(), await replica()];
      const accountId = randomUUID();
      const watch = watchMinute(accountId);
      const admitted: Admission[] = [];
      try {
        for (const order of ['the other fills the next window first', 'spends first'] as const) {
          // A counts the first request of a window, and reads the answer after a long task.
          const opening = send(a, accountId, admitted);
          holdEventLoop(LAG_MS);
          await opening;
          const window = await watch.current();
          // A's next requests are counted one by one until it is busy enough to reserve a share,
          // which it does in the window's last half second (a share is not spent in its last
          // quarter second, by A's reckoning of its end).
          for (let i = 1; i < HOT_AFTER; i += 1) await send(a, accountId, admitted);
          await sleepUntil(window.endsAt - 450);
          await send(a, accountId, admitted);
          await sleepUntil(window.endsAt + 20);
          // B counts the next window's first request on its own, so that its burst's requests
          // are all sent inside that window
          const fill = async () => {
            await send(b, accountId, admitted);
            await Promise.all(Array.from({ length: LIMIT + 10 }, () => send(b, accountId, admitted)));
          };
          // note: a few milliseconds apart, so that a point spent before the next window starts
          // is seen to be (the clocks read whole milliseconds)
          const spend = async () => {
            for (let i = 0; i < MAX_LEASE; i += 1) {
              await send(a, accountId, admitted);
              await sleep(5);
            }
          };
          if (order === 'spends first') {
            await spend();
            await fill();
          } else {
            await fill();
            await spend();
          }
          await watch.look();
          // the next round starts in a window of its own
          const next = await watch.current();
          await sleepUntil(next.endsAt + 20);
        }
      } finally {
        watch.stop();
      }
      const windows = [...watch.windows.values()];
      expect(windows.length).toBeGreaterThanOrEqual(4);
      const { perWindow, outside } = tally(admitted, windows);
      expect(outside).toEqual([]);
      for (const n of perWindow) expect(n).toBeLessThanOrEqual(LIMIT);
      // the windows B filled were seen filled, to within a share (those straddling an edge are not counted)
      expect(perWindow.filter((n) => n >= LIMIT - MAX_LEASE)).toHaveLength(2);
      expect(Math.min(...watch.counts)).toBeGreaterThanOrEqual(0);
    },
    25_000,
  );

  it('gives nothing back to a window that ended before the give-back reached Redis: no window is started below zero, none lowered', async () => {
    const [{ quota: a, redis: connectionOfA }, { quota: b }] = [await replica(), await replica()];
    const accountId = randomUUID();
    const slow = `${prefix}:slow-trip:${accountId}`;
    for (const then of ['no window', 'a new window'] as const) {
      // a request counted by A, which turns out not to be the account's just before the window ends
      const counted = await a.count(accountId, 'enterprise');
      const { expiresAt } = await readKey(minuteKey(accountId));
      await sleepUntil(expiresAt - 100);
      // note: Redis runs a connection's commands in order: A's give-back waits behind a
      // 400 ms BLPOP on A's connection, and reaches the minute after it ended
      const blocked = connectionOfA.blpop(slow, 0.4);
      a.refund(counted);
      if (then === 'a new window') {
        await sleepUntil(expiresAt + 50);
        await b.count(accountId, 'enterprise');
      }
      await blocked;
      await connectionOfA.ping();
      const minute = await readKey(minuteKey(accountId));
      if (then === 'no window') {
        expect(minute.count).toBeNull();
      } else {
        expect(minute.count).toBe(1);
        expect(minute.expiresAt).toBeGreaterThan(expiresAt + 1_000);
      }
      // the day window the request was counted in took its point back
      expect((await readKey(dayKey(accountId))).count).toBe(then === 'no window' ? 0 : 1);
    }
  });

  it('gives back no more than a window holds: a count never goes below zero', async () => {
    const { quota: a } = await replica();
    const accountId = randomUUID();
    const counted = await a.count(accountId, 'enterprise');
    const { expiresAt } = await readKey(minuteKey(accountId));
    // the window's count was lowered meanwhile (an operator's reset): the point is no longer in it
    await observer.set(minuteKey(accountId), '0', 'KEEPTTL');
    // in the last quarter second of its window, so that A does not keep the point for itself
    await sleepUntil(expiresAt - 200);
    a.refund(counted);
    await sleep(50);
    const minute = await readKey(minuteKey(accountId));
    expect(minute).toEqual({ count: 0, expiresAt });
    expect((await readKey(dayKey(accountId))).count).toBe(0);
  });
});
