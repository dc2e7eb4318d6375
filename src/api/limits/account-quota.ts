import type { RedisClient } from '../../shared/infra/redis.js';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { TIER_LIMITS, hasApiAccess, type ApiTier } from '../../shared/access/tiers.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import { secondsUntil, settleLimit } from './store-unavailable.js';
import { IDLE_MS, QuotaLeases, type Returned, type WindowCount, type WindowLimits } from './quota-leases.js';
import { QuotaCountScript, type GateRefusal, type QuotaGate, type QuotaKeys, type WindowsCounted } from './quota-count-script.js';

export interface QuotaWindow {
  limit: number;
  remaining: number;
  /** the window's length, in seconds */
  windowSec: number;
  /** whole seconds until the window ends and its count starts over (rounded up, at least 1) */
  resetSec: number;
}

export interface QuotaDecision {
  minute: QuotaWindow;
  day: QuotaWindow;
  /**
   * set when the request is over a limit: `window` refused it, and `retryAfterSec` is the latest
   * `resetSec` of the windows left with nothing remaining (the refusing one at least)
   */
  exceeded?: { window: 'per-minute' | 'per-day'; retryAfterSec: number };
}

/** What one request added to its account's two windows. */
export interface QuotaCount {
  accountId: string;
  minute: WindowCount;
  day: WindowCount;
}

/**
 * A count behind a request's gate (countBehind): `counted` when Redis checked the gate and counted
 * the request, `local` when a share here counted it and the gate is the caller's to read, or the
 * gate's refusal, with nothing counted.
 */
export type GatedCount = { outcome: 'counted' | 'local'; count: QuotaCount } | GateRefusal;

/** The windows' lengths, in whole seconds (rate-limiter-flexible counts in seconds). */
export interface QuotaWindows {
  minuteSec: number;
  daySec: number;
}

/** note: a test shortens the windows to see several of them end; the service never does. */
const WINDOWS: QuotaWindows = { minuteSec: 60, daySec: 24 * 60 * 60 };

/**
 * Gives back up to ARGV[1] points to a window (rate-limiter-flexible's key: an integer count that
 * expires when the window ends) only while it is the window they were taken from: the key exists
 * (a give-back never starts a window) and has at most ARGV[2] + ARGV[3] ms left, ARGV[2] being the
 * time that window had left when the give-back was sent, as this process reckons it. Never below 0.
 *
 * note: this process's reckoning of a window's end is never later than Redis's (QuotaLeases.reserved),
 * so the window the points were taken from has at least ARGV[2] ms left less the give-back's own
 * trip, and at most ARGV[2] plus the trip that read it; a later window started after it ended, so
 * it has at least a whole window more than that. Half a window (ARGV[3]) tells the two apart unless
 * a trip takes longer than half a window.
 */
const GIVE_BACK = `
local left = redis.call('PTTL', KEYS[1])
if left < 0 or left > tonumber(ARGV[2]) + tonumber(ARGV[3]) then return 0 end
local count = tonumber(redis.call('GET', KEYS[1]))
if count == nil or count <= 0 then return 0 end
local back = math.min(count, tonumber(ARGV[1]))
redis.call('DECRBY', KEYS[1], back)
return back`;

type ScriptClient = RedisClient & {
  quotaGiveBack(key: string, points: number, leftMs: number, toleranceMs: number): Promise<number>;
};

/** A window's limiter, and its length in ms. */
interface WindowLimiter {
  limiter: RateLimiterRedis;
  ms: number;
}

/** A day charge of a file import: what its refund gives back, and to which window. */
export interface DayCharge {
  accountId: string;
  points: number;
  /** the end of the window it was taken from, as this process reckons it */
  endsAt: number;
}

/**
 * Seconds until neither window refuses: the latest reset of those with nothing left. note: this is
 * the `Retry-After` of a 429, so it is never earlier than the `t` the `RateLimit` field gives an
 * exhausted window (docs/access.md#ratelimit-and-ratelimit-policy); a minute refusal while the
 * day is spent too waits for the day.
 */
function secondsUntilAllowed(...windows: QuotaWindow[]): number {
  return Math.max(...windows.filter((w) => w.remaining === 0).map((w) => w.resetSec));
}

const highest = (pick: (limits: { perMinute: number; perDay: number }) => number) => Math.max(...Object.values(TIER_LIMITS).map(pick));

/**
 * Per-account request quotas by tier (docs/access.md#rate-limits), counted by rate-limiter-flexible in Redis. Both
 * windows are fixed windows that start with the first request after the previous one ended,
 * which is how RateLimiterRedis counts. The count is per account whatever its tier, and the
 * decision compares it with the tier's limit, so the two windows can be counted together with
 * the lockout and auth-version checks in one command (QuotaCountScript), before the tier is known
 * for sure.
 *
 * An account that keeps this process busy is counted a share at a time (quota-leases.ts): one
 * reservation in Redis covers its next requests here, so most of them cost no quota round trip.
 */
export class AccountQuota {
  private readonly minute: WindowLimiter;
  private readonly day: WindowLimiter;
  private readonly redis: ScriptClient;
  private readonly script: QuotaCountScript;
  private readonly leases = new QuotaLeases();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    redis: RedisClient,
    redisPrefix: string,
    private readonly windows: QuotaWindows = WINDOWS,
  ) {
    const build = (window: string, points: number, duration: number): WindowLimiter => ({
      limiter: new RateLimiterRedis({ storeClient: redis, keyPrefix: `${redisPrefix}:quota-${window}`, points, duration }),
      ms: duration * 1000,
    });
    this.minute = build('minute', highest((l) => l.perMinute), windows.minuteSec);
    this.day = build('day', highest((l) => l.perDay), windows.daySec);
    redis.defineCommand('quotaGiveBack', { numberOfKeys: 1, lua: GIVE_BACK });
    this.redis = redis as ScriptClient;
    this.script = new QuotaCountScript(redis);
    this.sweeper = setInterval(() => void this.giveBackUnspent(this.leases.sweep(Date.now())), IDLE_MS / 2);
    this.sweeper.unref();
  }

  /**
   * Counts one request in both windows: from this process's share of the account's windows when
   * it holds one, else in Redis (one command for both windows), reserving a share for the
   * account's next requests when its windows have room. `tier` is the one the account is known
   * by (a cached key's): a share is reserved only within that tier's limits.
   */
  async count(accountId: string, tier: string): Promise<QuotaCount> {
    const counted = await this.countUnless(accountId, tier, undefined);
    if (counted.outcome === 'counted' || counted.outcome === 'local') return counted.count;
    throw new Error(`a count without a gate was refused (${counted.outcome})`);
  }

  /**
   * Counts one request as `count` does, and when the count goes to Redis, in the same command
   * and first, checks the request's gate (the client's lockout, the key's auth version): a request
   * refused there is not counted. note: one command for what were three (a read of the gate,
   * a count in each window); a request counted from a share here reads its gate itself.
   */
  countBehind(accountId: string, tier: string, gate: QuotaGate): Promise<GatedCount> {
    return this.countUnless(accountId, tier, gate);
  }

  private async countUnless(accountId: string, tier: string, gate: QuotaGate | undefined): Promise<GatedCount> {
    const local = this.leases.take(accountId, Date.now());
    if (local) return { outcome: 'local', count: { accountId, ...local } };
    const coming = this.leases.reservationFor(accountId);
    if (coming) {
      await coming;
      const shared = this.leases.take(accountId, Date.now());
      if (shared) return { outcome: 'local', count: { accountId, ...shared } };
    }
    const limits = hasApiAccess(tier) ? TIER_LIMITS[tier] : undefined;
    const counting = this.leases.begin(accountId, limits, Date.now());
    try {
      return await this.countInRedis(accountId, limits, counting.size, gate);
    } finally {
      counting.done();
    }
  }

  /** The account's windows as rate-limiter-flexible names them. */
  private keysOf(accountId: string): QuotaKeys {
    return { minuteKey: this.minute.limiter.getKey(accountId), dayKey: this.day.limiter.getKey(accountId), minuteSec: this.windows.minuteSec, daySec: this.windows.daySec };
  }

  /** Sends the count; a Redis that fails is the catalogue's 503, as for the other checks. */
  private async send(accountId: string, size: number, gate: QuotaGate | undefined): Promise<WindowsCounted | GateRefusal> {
    try {
      const keys = this.keysOf(accountId);
      return await (gate === undefined ? this.script.count(keys, size) : this.script.countBehind(gate, keys, size));
    } catch {
      throw apiErrors.serviceUnavailable();
    }
  }

  /** Counts `size` points in both windows; keeps what fits beyond the request's own as a share. */
  private async countInRedis(accountId: string, limits: WindowLimits | undefined, size: number, gate: QuotaGate | undefined): Promise<GatedCount> {
    // note: read before the command goes out, so that the windows' ends measured from it are
    // never later than Redis's (QuotaLeases.reserved)
    const sentAt = Date.now();
    const reply = await this.send(accountId, size, gate);
    if (reply.outcome !== 'counted') return reply;
    const counted = reply.minute;
    const dayCounted = reply.day;
    // note: what did not fit under the limits goes back at once; a request that did not fit at
    // all is counted as one, as it would be without shares, for the decision to refuse it.
    const over = limits === undefined ? 0 : Math.max(0, counted.count - limits.perMinute, dayCounted.count - limits.perDay);
    const granted = Math.max(0, size - over);
    // note: a request refused while this process received a share meanwhile takes the share,
    // and its own count goes back: the share's point is counted already.
    const held = granted === 0 ? this.leases.take(accountId, Date.now()) : undefined;
    const excess = held ? size : granted === 0 ? size - 1 : size - granted;
    if (excess > 0) {
      void this.giveBack(this.minute, accountId, sentAt + counted.msBeforeNext, excess);
      void this.giveBack(this.day, accountId, sentAt + dayCounted.msBeforeNext, excess);
    }
    if (held) return { outcome: 'counted', count: { accountId, ...held } };
    const result = this.leases.reserved(accountId, size, granted, counted, dayCounted, sentAt, Date.now());
    return { outcome: 'counted', count: { accountId, ...result } };
  }

  /**
   * The tier's verdict on a count. note: a request refused by the minute window is given back
   * to the day window, so a client that retries too fast does not burn its daily quota.
   */
  decide(count: QuotaCount, tier: ApiTier): QuotaDecision {
    const limits = TIER_LIMITS[tier];
    const window = (consumed: number, limit: number, windowSec: number, msBeforeNext: number): QuotaWindow => ({
      limit,
      remaining: Math.max(0, limit - consumed),
      windowSec,
      resetSec: secondsUntil(msBeforeNext),
    });
    const minute = window(count.minute.consumed, limits.perMinute, this.windows.minuteSec, count.minute.msBeforeNext);
    if (count.minute.consumed > limits.perMinute) {
      void this.giveBack(this.day, count.accountId, count.day.endsAt);
      const day = window(count.day.consumed - 1, limits.perDay, this.windows.daySec, count.day.msBeforeNext);
      return { minute, day, exceeded: { window: 'per-minute', retryAfterSec: secondsUntilAllowed(minute, day) } };
    }
    const day = window(count.day.consumed, limits.perDay, this.windows.daySec, count.day.msBeforeNext);
    return {
      minute,
      day,
      ...(count.day.consumed > limits.perDay ? { exceeded: { window: 'per-day' as const, retryAfterSec: secondsUntilAllowed(minute, day) } } : {}),
    };
  }

  /**
   * Charges `points` more requests to the account's day window: a file import counted as the
   * bulk requests it replaces (docs/imports.md#whole-files). Refused, and given back, when they do
   * not fit in what the tier allows today; `retryAfterSec` is when the day window starts over.
   */
  async chargeDay(accountId: string, tier: ApiTier, points: number): Promise<{ ok: true; charge: DayCharge } | { ok: false; retryAfterSec: number }> {
    const sentAt = Date.now();
    if (points <= 0) return { ok: true, charge: { accountId, points: 0, endsAt: sentAt } };
    const { res } = await settleLimit(this.day.limiter.consume(accountId, points));
    const endsAt = sentAt + res.msBeforeNext;
    if (res.consumedPoints <= TIER_LIMITS[tier].perDay) return { ok: true, charge: { accountId, points, endsAt } };
    void this.giveBack(this.day, accountId, endsAt, points);
    return { ok: false, retryAfterSec: secondsUntil(res.msBeforeNext) };
  }

  /** Gives back a day charge whose import was not kept after all (best effort), to the window it was taken from. */
  refundDay(charge: DayCharge): void {
    if (charge.points > 0) void this.giveBack(this.day, charge.accountId, charge.endsAt, charge.points);
  }

  /** Undoes a count for a request that turned out not to be the account's (locked-out IP, stale key). */
  refund(count: QuotaCount): void {
    // note: into this process's share when it holds one of the count's windows, spent by the
    // account's next request here.
    if (this.leases.giveBack(count.accountId, count, Date.now())) return;
    void this.giveBack(this.minute, count.accountId, count.minute.endsAt);
    void this.giveBack(this.day, count.accountId, count.day.endsAt);
  }

  /** Gives every unspent share back (the process stops), before its Redis connection closes. */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    await Promise.all(this.giveBackUnspent(this.leases.sweep(Date.now(), true)));
  }

  private giveBackUnspent(returned: Returned[]): Promise<void>[] {
    return returned.flatMap(({ accountId, minute, day, minuteEndsAt, dayEndsAt }) => [
      ...(minute > 0 ? [this.giveBack(this.minute, accountId, minuteEndsAt, minute)] : []),
      ...(day > 0 ? [this.giveBack(this.day, accountId, dayEndsAt, day)] : []),
    ]);
  }

  /**
   * Gives `points` back to the account's window that ends at `endsAt` (this process's reckoning),
   * if that window is still the one Redis counts in (GIVE_BACK). note: best effort and off the
   * request path; a lost refund costs the account what it gave back.
   */
  private giveBack(window: WindowLimiter, accountId: string, endsAt: number, points = 1): Promise<void> {
    const leftMs = Math.floor(endsAt - Date.now());
    // note: ended here, so ended or about to in Redis: nothing to give back to.
    if (leftMs <= 0) return Promise.resolve();
    return this.redis.quotaGiveBack(window.limiter.getKey(accountId), points, leftMs, window.ms / 2).then(
      () => undefined,
      () => undefined,
    );
  }
}
