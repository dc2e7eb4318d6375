import { describe, expect, it } from 'vitest';
import {
  EXPIRY_MARGIN_MS,
  HOT_AFTER,
  IDLE_MS,
  LEASE_FRACTION,
  MAX_LEASE,
  QuotaLeases,
  RETURN_MARGIN_MS,
} from '../../../src/api/limits/quota-leases.js';

const LIMITS = { perMinute: 1_000, perDay: 500_000 };
const ACCOUNT = 'acme';
const T0 = 1_000_000;

/** Counts one request in "Redis" (a counter per window) the way AccountQuota does, granting what fits. */
function counter() {
  let minute = 0;
  let day = 0;
  return {
    count(leases: QuotaLeases, now: number, limits = LIMITS, msLeft = { minute: 60_000, day: 86_400_000 }) {
      const local = leases.take(ACCOUNT, now);
      if (local) return { local: true, size: 0, ...local };
      const { size, done } = leases.begin(ACCOUNT, limits, now);
      minute += size;
      day += size;
      const over = Math.max(0, minute - limits.perMinute, day - limits.perDay);
      const granted = Math.max(0, size - over);
      const result = leases.reserved(ACCOUNT, size, granted, { count: minute, msBeforeNext: msLeft.minute }, { count: day, msBeforeNext: msLeft.day }, now);
      // what AccountQuota gives back to Redis
      const back = granted === 0 ? size - 1 : size - granted;
      minute -= back;
      day -= back;
      done();
      return { local: false, size, ...result };
    },
    get minute() {
      return minute;
    },
  };
}

describe('QuotaLeases', () => {
  it(`counts an account's first ${HOT_AFTER} requests one by one, then reserves a share of at most ${MAX_LEASE} more`, () => {
    const leases = new QuotaLeases();
    const redis = counter();
    const sizes = Array.from({ length: HOT_AFTER + 1 }, (_, i) => redis.count(leases, T0 + i).size);
    expect(sizes.slice(0, HOT_AFTER)).toEqual(Array(HOT_AFTER).fill(1));
    expect(sizes[HOT_AFTER]).toBe(MAX_LEASE + 1);
    expect(leases.unspent(ACCOUNT)).toBe(MAX_LEASE);
  });

  it('counts every request once, in order, whether from a share or from Redis: consumed goes 1, 2, 3, ...', () => {
    const leases = new QuotaLeases();
    const redis = counter();
    const seen = Array.from({ length: 60 }, (_, i) => redis.count(leases, T0 + i));
    expect(seen.map((c) => c.minute.consumed)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    expect(seen.filter((c) => c.local).length).toBeGreaterThan(40);
    // Redis holds the requests plus this process's unspent share, never less
    expect(redis.minute).toBe(60 + leases.unspent(ACCOUNT));
  });

  it(`reserves at most 1/${LEASE_FRACTION} of what is left, and nothing once a window has less than a quarter left`, () => {
    const leases = new QuotaLeases();
    const redis = counter();
    const limits = { perMinute: 300, perDay: 100_000 };
    const sizes: number[] = [];
    for (let i = 0; i < 300; i += 1) sizes.push(redis.count(leases, T0 + i, limits).size);
    const shares = sizes.filter((s) => s > 1);
    expect(shares.length).toBeGreaterThan(0);
    expect(Math.max(...shares)).toBeLessThanOrEqual(Math.floor(300 / LEASE_FRACTION));
    expect(redis.minute).toBe(300);
    // the last quarter of the window was counted request by request
    const lastShareAt = sizes.findLastIndex((s) => s > 1);
    expect(lastShareAt).toBeLessThanOrEqual(300 - 300 / 4);
    expect(redis.count(leases, T0 + 400, limits).minute.consumed).toBe(301);
  });

  it('never reserves while another count of the account is on its way, and has its requests wait for a share on its way', () => {
    const leases = new QuotaLeases();
    const redis = counter();
    for (let i = 0; i < HOT_AFTER; i += 1) redis.count(leases, T0);
    const first = leases.begin(ACCOUNT, LIMITS, T0);
    const second = leases.begin(ACCOUNT, LIMITS, T0);
    expect(first.size).toBe(MAX_LEASE + 1);
    expect(second.size).toBe(1);
    expect(leases.reservationFor(ACCOUNT)).toBeInstanceOf(Promise);
    second.done();
    first.done();
    expect(leases.reservationFor(ACCOUNT)).toBeUndefined();
  });

  it(`spends no share in the last ${EXPIRY_MARGIN_MS} ms of its window, whose end Redis decides`, () => {
    const leases = new QuotaLeases();
    const redis = counter();
    for (let i = 0; i <= HOT_AFTER; i += 1) redis.count(leases, T0, LIMITS, { minute: 10_000, day: 86_400_000 });
    expect(leases.unspent(ACCOUNT)).toBe(MAX_LEASE);
    expect(leases.take(ACCOUNT, T0 + 10_000 - EXPIRY_MARGIN_MS - 1)).toBeDefined();
    expect(leases.take(ACCOUNT, T0 + 10_000 - EXPIRY_MARGIN_MS)).toBeUndefined();
  });

  it(`gives an unspent share back after ${IDLE_MS} ms without a request, per window only while it has ${RETURN_MARGIN_MS} ms left`, () => {
    const leases = new QuotaLeases();
    const redis = counter();
    for (let i = 0; i <= HOT_AFTER; i += 1) redis.count(leases, T0, LIMITS, { minute: 3_000, day: 86_400_000 });
    expect(leases.sweep(T0 + IDLE_MS - 1)).toEqual([]);
    // the minute window ends at T0 + 3,000: too close to give its points back
    expect(leases.sweep(T0 + IDLE_MS)).toEqual([{ accountId: ACCOUNT, minute: 0, day: MAX_LEASE, minuteEndsAt: T0 + 3_000, dayEndsAt: T0 + 86_400_000 }]);
    expect(leases.unspent(ACCOUNT)).toBe(0);

    const early = new QuotaLeases();
    const again = counter();
    for (let i = 0; i <= HOT_AFTER; i += 1) again.count(early, T0);
    expect(early.sweep(T0, true)).toEqual([{ accountId: ACCOUNT, minute: MAX_LEASE, day: MAX_LEASE, minuteEndsAt: T0 + 60_000, dayEndsAt: T0 + 86_400_000 }]);
  });

  it('drops what it held of a window that ended: a reading of the next window starts the share over', () => {
    const leases = new QuotaLeases();
    const redis = counter();
    for (let i = 0; i <= HOT_AFTER; i += 1) redis.count(leases, T0);
    expect(leases.unspent(ACCOUNT)).toBe(MAX_LEASE);
    const next = leases.reserved(ACCOUNT, 1, 1, { count: 1, msBeforeNext: 60_000 }, { count: 30, msBeforeNext: 86_000_000 }, T0 + 61_000);
    expect(next.minute.consumed).toBe(1);
    expect(leases.unspent(ACCOUNT)).toBe(0);
  });

  it('counts a refused request as one, as without shares, and keeps nothing of it', () => {
    const leases = new QuotaLeases();
    const refused = leases.reserved(ACCOUNT, 5, 0, { count: 305, msBeforeNext: 1_000 }, { count: 305, msBeforeNext: 1_000 }, T0);
    expect(refused.minute.consumed).toBe(301);
    expect(leases.unspent(ACCOUNT)).toBe(0);
  });

  it('holds a point given back for a request that was not the account\'s, for its next request here', () => {
    const leases = new QuotaLeases();
    const redis = counter();
    const counted = redis.count(leases, T0);
    expect(new QuotaLeases().giveBack(ACCOUNT, counted, T0)).toBe(false);
    expect(leases.giveBack(ACCOUNT, counted, T0)).toBe(true);
    // the refunded request no longer counts: the next one is the first again
    expect(leases.take(ACCOUNT, T0)?.minute.consumed).toBe(1);
  });
});
