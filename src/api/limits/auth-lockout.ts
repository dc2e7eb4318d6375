import type { RedisClient } from '../../shared/infra/redis.js';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { apiErrors } from '../../shared/errors/api-errors.js';
import { lockoutSubject } from '../client-ip.js';
import { secondsUntil } from './store-unavailable.js';

export interface LockoutPolicy {
  /** failures within the window that start a lockout */
  failures: number;
  windowSec: number;
  lockoutSec: number;
}

/** API keys and session tokens on `/v1/api/*` (docs/access.md#lockout). */
export const API_LOCKOUT_POLICY: LockoutPolicy = { failures: 20, windowSec: 5 * 60, lockoutSec: 15 * 60 };
/** Basic auth of `/admin/queues` and `/metrics`, counted apart (docs/access.md#lockout). */
export const ADMIN_LOCKOUT_POLICY: LockoutPolicy = { failures: 10, windowSec: 5 * 60, lockoutSec: 15 * 60 };

/**
 * Per-IP lockout after repeated failed authentications, shared by every replica through Redis. Takes canonical addresses (clientIp) and counts an IPv6 client by its
 * /64 (lockoutSubject), so each key is short whatever a request sent.
 */
export class AuthLockout {
  private readonly failures: RateLimiterRedis;

  constructor(
    redis: RedisClient,
    redisPrefix: string,
    private readonly policy: LockoutPolicy = API_LOCKOUT_POLICY,
    counter = 'auth-failures',
  ) {
    this.failures = new RateLimiterRedis({
      storeClient: redis,
      keyPrefix: `${redisPrefix}:${counter}`,
      points: policy.failures,
      duration: policy.windowSec,
    });
  }

  /**
   * The Redis key holding the IP's failure count, for callers that read it together with other
   * keys in one command (see `isLockedOut`); the count is a plain integer there.
   */
  failureKey(ip: string): string {
    return this.failures.getKey(lockoutSubject(ip));
  }

  /** The failures that lock an IP out: for a check made where the count is read (QuotaCountScript). */
  get threshold(): number {
    return this.policy.failures;
  }

  isLockedOut(failureCount: string | null): boolean {
    return failureCount !== null && Number(failureCount) >= this.policy.failures;
  }

  /** Seconds the IP stays locked out, or undefined when it may try. */
  async lockedForSec(ip: string): Promise<number | undefined> {
    let res;
    try {
      res = await this.failures.get(lockoutSubject(ip));
    } catch {
      throw apiErrors.serviceUnavailable();
    }
    if (res === null || res.consumedPoints < this.policy.failures) return undefined;
    return secondsUntil(res.msBeforeNext);
  }

  /** Counts one failed authentication; the one that reaches the threshold starts the lockout. */
  async recordFailure(ip: string): Promise<void> {
    try {
      const subject = lockoutSubject(ip);
      const res = await this.failures.penalty(subject, 1);
      if (res.consumedPoints === this.policy.failures) await this.failures.block(subject, this.policy.lockoutSec);
    } catch {
      throw apiErrors.serviceUnavailable();
    }
  }
}
