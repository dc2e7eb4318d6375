import { RateLimiterRes } from 'rate-limiter-flexible';
import { apiErrors } from '../../shared/errors/api-errors.js';

/**
 * rate-limiter-flexible rejects with a RateLimiterRes when a limit is hit and with an Error when
 * Redis fails; callers want the former as a value and the latter as a clean 503.
 */
export async function settleLimit(promise: Promise<RateLimiterRes>): Promise<{ allowed: boolean; res: RateLimiterRes }> {
  try {
    return { allowed: true, res: await promise };
  } catch (rejection) {
    if (rejection instanceof RateLimiterRes) return { allowed: false, res: rejection };
    throw apiErrors.serviceUnavailable();
  }
}

export function secondsUntil(msBeforeNext: number): number {
  return Math.max(1, Math.ceil(msBeforeNext / 1000));
}
