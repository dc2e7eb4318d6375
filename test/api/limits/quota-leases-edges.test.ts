import { describe, expect, it } from 'vitest';
import { HOT_AFTER, QuotaLeases, RETURN_MARGIN_MS, type LocalCount, type WindowReading } from '../../../src/api/limits/quota-leases.js';

const LIMITS = { perMinute: 1_000, perDay: 500_000 };
const ACCOUNT = 'acme';
const T0 = 1_000_000;
const DAY_ENDS_AT = T0 + 86_000_000;

/**
 * One count of the account in "Redis", whose minute window ends at `endsAt`: sent at `sentAt`,
 * counted there at once, its answer read `lag` ms later (the event loop was busy meanwhile).
 */
function count(leases: QuotaLeases, counted: number, endsAt: number, sentAt: number, lag: number): { size: number; count: LocalCount } {
  const { size, done } = leases.begin(ACCOUNT, LIMITS, sentAt);
  const reading = (ends: number): WindowReading => ({ count: counted + size, msBeforeNext: ends - sentAt });
  const result = leases.reserved(ACCOUNT, size, size, reading(endsAt), reading(DAY_ENDS_AT), sentAt, sentAt + lag);
  done();
  return { size, count: result };
}

/**
 * An account busy here in a minute window that Redis ends at `endsAt`: HOT_AFTER requests
 * counted one by one from T0, the first of them read `firstLag` ms late; the lease is made of
 * that first reading.
 */
function busyAccount(endsAt: number, firstLag: number): QuotaLeases {
  const leases = new QuotaLeases();
  count(leases, 0, endsAt, T0, firstLag);
  for (let i = 1; i < HOT_AFTER; i += 1) count(leases, i, endsAt, T0 + firstLag, 0);
  return leases;
}

describe('QuotaLeases at the edges of its windows', () => {
  // The minute window ends at END as Redis counts it; a share is reserved 400 ms before that.
  const END = T0 + 10_000;
  const SENT = END - 400;

  it.each([
    { firstLag: 300, shareLag: 0 },
    { firstLag: 600, shareLag: 0 },
    { firstLag: 1_000, shareLag: 0 },
    { firstLag: 600, shareLag: 600 },
    { firstLag: 0, shareLag: 1_500 },
    { firstLag: 0, shareLag: 5_000 },
  ])('spends no point of a share at or after its window\'s end, whatever answer waited behind the event loop (first reading $firstLag ms, the share\'s $shareLag ms)', ({ firstLag, shareLag }) => {
    const leases = busyAccount(END, firstLag);
    const { size, count: reservation } = count(leases, HOT_AFTER, END, SENT, shareLag);
    expect(size).toBeGreaterThan(1);
    // the ends it names are never later than Redis's
    expect(reservation.minute.endsAt).toBeLessThanOrEqual(END);
    expect(reservation.day.endsAt).toBeLessThanOrEqual(DAY_ENDS_AT);
    let spentAfterEnd = 0;
    for (let now = Math.max(END, SENT + shareLag); now <= END + 6_000; now += 10) {
      if (leases.take(ACCOUNT, now) !== undefined) spentAfterEnd += 1;
    }
    expect(spentAfterEnd).toBe(0);
  });

  it('still spends a share whose answer came back in time, before the end', () => {
    const leases = busyAccount(END, 600);
    const { size } = count(leases, HOT_AFTER, END, SENT, 0);
    const spent = Array.from({ length: size - 1 }, (_, i) => leases.take(ACCOUNT, SENT + i));
    expect(spent.every((c) => c !== undefined)).toBe(true);
    expect(spent.at(-1)?.minute.endsAt).toBe(END);
  });

  it(`hands a share's points back naming the windows as Redis ends them, the minute's only while Redis has ${RETURN_MARGIN_MS} ms of it left`, () => {
    // the first reading waited 500 ms; at T0 + 1,100 Redis has 1,900 ms of the minute left
    const end = T0 + 3_000;
    const leases = busyAccount(end, 500);
    const { size } = count(leases, HOT_AFTER, end, T0 + 600, 0);
    expect(leases.sweep(T0 + 1_100, true)).toEqual([{ accountId: ACCOUNT, minute: 0, day: size - 1, minuteEndsAt: end, dayEndsAt: DAY_ENDS_AT }]);
  });

  it('does not hold a point of an earlier window in the lease of the next one', () => {
    const leases = busyAccount(T0 + 2_000, 0);
    const { count: earlier } = count(leases, HOT_AFTER, T0 + 2_000, T0 + 1_000, 0);
    // the next minute window, read at T0 + 2,500: the lease starts over
    const { count: next } = count(leases, 0, T0 + 62_500, T0 + 2_500, 0);
    expect(leases.unspent(ACCOUNT)).toBe(0);
    expect(leases.giveBack(ACCOUNT, earlier, T0 + 2_600)).toBe(false);
    expect(leases.unspent(ACCOUNT)).toBe(0);
    // a request of the lease's own windows is held for the account's next request, as before
    expect(leases.giveBack(ACCOUNT, next, T0 + 2_600)).toBe(true);
    expect(leases.unspent(ACCOUNT)).toBe(1);
  });
});
