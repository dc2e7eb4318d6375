/**
 * Shares of accounts' quota windows that this API process reserved in Redis and spends locally
 * (docs/access.md#how-the-quota-is-counted-across-replicas). A reserved point is counted in
 * Redis like a request, so every replica's grants together never exceed the limit; spending it
 * here costs no round trip. What is not spent goes back while its window is still the one it was
 * reserved in, or lapses with the window.
 *
 * note: the same shape as quota-based global rate limiting (Envoy's rate limit quota service):
 * the shared counter stays the authority, a replica holds a small, short-lived share of it.
 * Shares are only for accounts busy here (HOT_AFTER requests in the window), are small against
 * what is left of the window (LEASE_FRACTION), and stop in its last quarter
 * (LEASE_FLOOR_FRACTION), so that near the limit every request is counted in Redis again, as
 * without leases; points held by a replica that stopped seeing the account's requests go back
 * after IDLE_MS, and until then may refuse another replica's last requests before the limit.
 */

/** at most this many points reserved beyond the request that reserves them */
export const MAX_LEASE = 16;
/** a reservation takes at most this fraction of what its windows had left (1/32) */
export const LEASE_FRACTION = 32;
/** no share is reserved once a window has less than this fraction of its limit left (1/4) */
export const LEASE_FLOOR_FRACTION = 4;
/** an account is counted in Redis for its first requests of a window here, shares after */
export const HOT_AFTER = 8;
/** unspent points of an account this process has not seen for this long go back to Redis */
export const IDLE_MS = 1_000;
/**
 * a share is not spent in the last moments of its window. note: the end a lease holds is never
 * later than Redis's (see `reserved`); the margin only absorbs the two clocks running at
 * slightly different rates over the minute a lease lives.
 */
export const EXPIRY_MARGIN_MS = 250;
/**
 * nor given back this close to its end, where the points would be of little use. note: a return
 * reaching Redis after the end changes nothing there (AccountQuota's give-back script).
 */
export const RETURN_MARGIN_MS = 2_000;

export interface WindowReading {
  /** the window's count in Redis after the reservation */
  count: number;
  msBeforeNext: number;
}

/** What a request counts as in one window. */
export interface WindowCount {
  consumed: number;
  /** time left in the window, for the answer's headers */
  msBeforeNext: number;
  /**
   * when the window the request was counted in ends, on this process's clock, never later than
   * Redis ends it: what a give-back of the request's point names the window by
   */
  endsAt: number;
}

export interface WindowLimits {
  perMinute: number;
  perDay: number;
}

/** What a request is counted as in its account's two windows: consumed so far, and time left. */
export interface LocalCount {
  minute: WindowCount;
  day: WindowCount;
}

/** Points to hand back to Redis, per window (0: nothing for that window), and the windows they were taken from. */
export interface Returned {
  accountId: string;
  minute: number;
  day: number;
  minuteEndsAt: number;
  dayEndsAt: number;
}

interface Lease {
  /** the windows' counts in Redis as last read here, this process's unspent points included */
  minuteCount: number;
  dayCount: number;
  minuteEndsAt: number;
  dayEndsAt: number;
  unspent: number;
  /** the account's requests counted here in these windows */
  served: number;
  lastUsedAt: number;
}

const countOf = (lease: Lease, now: number): LocalCount => ({
  minute: { consumed: lease.minuteCount - lease.unspent, msBeforeNext: lease.minuteEndsAt - now, endsAt: lease.minuteEndsAt },
  day: { consumed: lease.dayCount - lease.unspent, msBeforeNext: lease.dayEndsAt - now, endsAt: lease.dayEndsAt },
});

/** The leases of one process, by account. Pure bookkeeping: the caller talks to Redis. */
export class QuotaLeases {
  private readonly leases = new Map<string, Lease>();
  /** counts of each account on their way to Redis from this process */
  private readonly pending = new Map<string, number>();
  /** the share on its way for an account, which its next requests here wait for */
  private readonly reservations = new Map<string, Promise<void>>();

  /** A point of the account's share, when one is held and its windows have time left. */
  take(accountId: string, now: number): LocalCount | undefined {
    const lease = this.leases.get(accountId);
    if (lease === undefined || lease.unspent === 0 || !this.spendable(lease, now)) return undefined;
    lease.unspent -= 1;
    lease.served += 1;
    lease.lastUsedAt = now;
    return countOf(lease, now);
  }

  /**
   * Starts counting a request of the account in Redis: how many points to ask for, 1 (a plain
   * count) unless the account is busy here, its windows have room, and no other count of it is
   * on its way from this process (a burst of one account is counted request by request, so
   * that no share arrives after the burst's requests were all counted without it). Call
   * `reserved` with the answer, then `done`, whatever happened.
   */
  begin(accountId: string, limits: WindowLimits | undefined, now: number): { size: number; done: () => void } {
    const pending = this.pending.get(accountId) ?? 0;
    this.pending.set(accountId, pending + 1);
    const size = pending === 0 ? this.sizeFor(accountId, limits, now) : 1;
    let release: () => void = () => undefined;
    if (size > 1) this.reservations.set(accountId, new Promise<void>((resolve) => (release = resolve)));
    return {
      size,
      done: () => {
        const left = (this.pending.get(accountId) ?? 1) - 1;
        if (left === 0) this.pending.delete(accountId);
        else this.pending.set(accountId, left);
        if (size > 1) {
          this.reservations.delete(accountId);
          release();
        }
      },
    };
  }

  /** The reservation of a share on its way for the account, if any: wait for it, then `take`. */
  reservationFor(accountId: string): Promise<void> | undefined {
    return this.reservations.get(accountId);
  }

  private sizeFor(accountId: string, limits: WindowLimits | undefined, now: number): number {
    const lease = this.leases.get(accountId);
    if (limits === undefined || lease === undefined || lease.served < HOT_AFTER || !this.spendable(lease, now)) return 1;
    const minuteLeft = limits.perMinute - lease.minuteCount;
    const dayLeft = limits.perDay - lease.dayCount;
    if (minuteLeft * LEASE_FLOOR_FRACTION < limits.perMinute || dayLeft * LEASE_FLOOR_FRACTION < limits.perDay) return 1;
    return Math.max(1, Math.min(MAX_LEASE + 1, Math.floor(Math.min(minuteLeft, dayLeft) / LEASE_FRACTION)));
  }

  /**
   * Records a reservation of `size` points, one of them for the request that made it, and what
   * Redis counted after it. `granted` is how many fit under the limits (the caller gives the
   * rest back); 0 means the request itself did not fit, and nothing is kept. `sentAt` is when
   * the reservation was sent to Redis, `now` when its answer is read here (the same by default).
   *
   * note: a window ends `msBeforeNext` after Redis counted the reservation, which is after it was
   * sent and before its answer is read here; measured from `sentAt`, the end is never later than
   * Redis's, however long the event loop kept the answer waiting. Measured from `now` it would be
   * late by that wait, and a share could be spent after its window ended.
   */
  reserved(accountId: string, size: number, granted: number, minute: WindowReading, day: WindowReading, sentAt: number, now = sentAt): LocalCount {
    const minuteEndsAt = sentAt + minute.msBeforeNext;
    const dayEndsAt = sentAt + day.msBeforeNext;
    if (granted === 0) {
      // note: refused, and counted as one request, as it would be without shares
      const back = size - 1;
      return {
        minute: { consumed: minute.count - back, msBeforeNext: minute.msBeforeNext, endsAt: minuteEndsAt },
        day: { consumed: day.count - back, msBeforeNext: day.msBeforeNext, endsAt: dayEndsAt },
      };
    }
    const given = size - granted;
    const minuteCount = minute.count - given;
    const dayCount = day.count - given;
    let lease = this.leases.get(accountId);
    // note: a window that ended since the lease was read started over: what was held of it lapsed.
    if (lease === undefined || !this.sameWindows(lease, minuteEndsAt, dayEndsAt)) {
      lease = { minuteCount, dayCount, minuteEndsAt, dayEndsAt, unspent: 0, served: 0, lastUsedAt: now };
      this.leases.set(accountId, lease);
    } else {
      lease.minuteCount = Math.max(lease.minuteCount, minuteCount);
      lease.dayCount = Math.max(lease.dayCount, dayCount);
    }
    lease.unspent += granted - 1;
    lease.served += 1;
    lease.lastUsedAt = now;
    // note: the request's own point is spent at once; the others wait in the lease.
    return {
      minute: { consumed: lease.minuteCount - lease.unspent, msBeforeNext: minute.msBeforeNext, endsAt: minuteEndsAt },
      day: { consumed: lease.dayCount - lease.unspent, msBeforeNext: day.msBeforeNext, endsAt: dayEndsAt },
    };
  }

  /**
   * A point counted for a request that turned out not to be the account's (`takenFrom`, its
   * count): held for its next one while the lease is spendable and of the windows the request
   * was counted in. note: a point of an earlier window held in a later one's lease would be
   * spent beyond the later window's limit.
   */
  giveBack(accountId: string, takenFrom: LocalCount, now: number): boolean {
    const lease = this.leases.get(accountId);
    if (lease === undefined || !this.spendable(lease, now) || !this.sameWindows(lease, takenFrom.minute.endsAt, takenFrom.day.endsAt)) return false;
    lease.unspent += 1;
    return true;
  }

  /**
   * Takes the unspent points of accounts not seen for IDLE_MS (all of them with `all`), to be
   * given back to Redis, per window only while that window has RETURN_MARGIN_MS left; forgets
   * leases that are idle and empty, or whose windows ended.
   */
  sweep(now: number, all = false): Returned[] {
    const returned: Returned[] = [];
    for (const [accountId, lease] of this.leases) {
      if (this.pending.has(accountId) || (!all && now - lease.lastUsedAt < IDLE_MS && this.spendable(lease, now))) continue;
      if (lease.unspent > 0) {
        const minute = now < lease.minuteEndsAt - RETURN_MARGIN_MS ? lease.unspent : 0;
        const day = now < lease.dayEndsAt - RETURN_MARGIN_MS ? lease.unspent : 0;
        if (minute > 0 || day > 0) returned.push({ accountId, minute, day, minuteEndsAt: lease.minuteEndsAt, dayEndsAt: lease.dayEndsAt });
      }
      this.leases.delete(accountId);
    }
    return returned;
  }

  /** Points held unspent for the account (0 without a lease). */
  unspent(accountId: string): number {
    return this.leases.get(accountId)?.unspent ?? 0;
  }

  private spendable(lease: Lease, now: number): boolean {
    return now < Math.min(lease.minuteEndsAt, lease.dayEndsAt) - EXPIRY_MARGIN_MS;
  }

  /**
   * note: two readings of one window give ends apart by the difference of their trips to Redis;
   * readings of two windows, ends at least a window apart (the next starts after the last ends).
   */
  private sameWindows(lease: Lease, minuteEndsAt: number, dayEndsAt: number): boolean {
    return Math.abs(lease.minuteEndsAt - minuteEndsAt) < 1_000 && Math.abs(lease.dayEndsAt - dayEndsAt) < 1_000;
  }
}
