import type { Redis } from 'ioredis';
import { RateLimiterRedis, type RateLimiterRes } from 'rate-limiter-flexible';
import { TIER_LIMITS, type ApiTier } from '../../shared/tiers.js';
import { secondsUntil, settleLimit, serviceUnavailable } from './store-unavailable.js';

export interface QuotaWindow {
  limit: number;
  remaining: number;
}

export interface QuotaDecision {
  minute: QuotaWindow;
  day: QuotaWindow;
  /** set when the request is over a limit */
  exceeded?: { window: 'per-minute' | 'per-day'; retryAfterSec: number };
}

const MINUTE_SEC = 60;
const DAY_SEC = 24 * 60 * 60;

/**
 * Per-account request quotas by tier (spec 8). Both windows are fixed windows that start with the
 * first request after the previous one ended, which is how RateLimiterRedis counts. The Redis key
 * is per account only, so a tier change keeps the count and applies the new limit at once.
 */
export class AccountQuota {
  private readonly limiters: Record<ApiTier, { minute: RateLimiterRedis; day: RateLimiterRedis }>;

  constructor(redis: Redis, redisPrefix: string) {
    const build = (window: string, points: number, duration: number) =>
      new RateLimiterRedis({ storeClient: redis, keyPrefix: `${redisPrefix}:quota-${window}`, points, duration });
    this.limiters = {
      enterprise: {
        minute: build('minute', TIER_LIMITS.enterprise.perMinute, MINUTE_SEC),
        day: build('day', TIER_LIMITS.enterprise.perDay, DAY_SEC),
      },
      global: {
        minute: build('minute', TIER_LIMITS.global.perMinute, MINUTE_SEC),
        day: build('day', TIER_LIMITS.global.perDay, DAY_SEC),
      },
    };
  }

  /**
   * Counts one request. note: a request refused by the minute window is not charged to the
   * day window, so a client that retries too fast does not burn its daily quota.
   */
  async consume(accountId: string, tier: ApiTier): Promise<QuotaDecision> {
    const { minute, day } = this.limiters[tier];
    const limits = TIER_LIMITS[tier];
    const minuteResult = await settleLimit(minute.consume(accountId));
    const window = (res: RateLimiterRes | null, limit: number): QuotaWindow => ({
      limit,
      remaining: res === null ? limit : Math.max(0, res.remainingPoints),
    });
    if (!minuteResult.allowed) {
      const dayRes = await day.get(accountId).catch(() => {
        throw serviceUnavailable();
      });
      return {
        minute: window(minuteResult.res, limits.perMinute),
        day: window(dayRes, limits.perDay),
        exceeded: { window: 'per-minute', retryAfterSec: secondsUntil(minuteResult.res.msBeforeNext) },
      };
    }
    const dayResult = await settleLimit(day.consume(accountId));
    return {
      minute: window(minuteResult.res, limits.perMinute),
      day: window(dayResult.res, limits.perDay),
      ...(dayResult.allowed ? {} : { exceeded: { window: 'per-day', retryAfterSec: secondsUntil(dayResult.res.msBeforeNext) } }),
    };
  }
}
