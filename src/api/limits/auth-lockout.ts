import type { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { serviceUnavailable } from '../../shared/api-error.js';
import { secondsUntil } from './store-unavailable.js';

export const LOCKOUT_POLICY = { failures: 20, windowSec: 5 * 60, lockoutSec: 15 * 60 } as const;

/**
 * Per-IP lockout after repeated failed authentications (spec 5.7, decisions B), shared by every
 * replica through Redis.
 */
export class AuthLockout {
  private readonly failures: RateLimiterRedis;

  constructor(redis: Redis, redisPrefix: string) {
    this.failures = new RateLimiterRedis({
      storeClient: redis,
      keyPrefix: `${redisPrefix}:auth-failures`,
      points: LOCKOUT_POLICY.failures,
      duration: LOCKOUT_POLICY.windowSec,
    });
  }

  /**
   * The Redis key holding the IP's failure count, for callers that read it together with other
   * keys in one command (see `isLockedOut`); the count is a plain integer there.
   */
  failureKey(ip: string): string {
    return this.failures.getKey(ip);
  }

  isLockedOut(failureCount: string | null): boolean {
    return failureCount !== null && Number(failureCount) >= LOCKOUT_POLICY.failures;
  }

  /** Seconds the IP stays locked out, or undefined when it may try. */
  async lockedForSec(ip: string): Promise<number | undefined> {
    let res;
    try {
      res = await this.failures.get(ip);
    } catch {
      throw serviceUnavailable();
    }
    if (res === null || res.consumedPoints < LOCKOUT_POLICY.failures) return undefined;
    return secondsUntil(res.msBeforeNext);
  }

  /** Counts one failed authentication; the one that reaches the threshold starts the lockout. */
  async recordFailure(ip: string): Promise<void> {
    try {
      const res = await this.failures.penalty(ip, 1);
      if (res.consumedPoints === LOCKOUT_POLICY.failures) await this.failures.block(ip, LOCKOUT_POLICY.lockoutSec);
    } catch {
      throw serviceUnavailable();
    }
  }
}
