import { setTimeout as sleep } from 'node:timers/promises';
import { AttemptClient } from '@bulk-import/client';
import type { ApiContext } from './api-context.js';
import type { ApiTarget } from './api-target.js';
import { RateLimitPacer } from './rate-limit.js';
import type { RequestLimits } from './request-options.js';
import { DEFAULT_RETRY_POLICY } from './retry-policy.js';

/** The options a command's requests are made with; reads have no --max-watch or --no-idempotency. */
export type ContextOptions = RequestLimits & { maxWatchMs?: number; idempotency?: boolean };

/**
 * Everything a command's requests go through, from its options: one client and one pacer for the
 * whole run (its requests share the account's quota), the retry rules the options set over the
 * defaults, and `notice` for the retry and wait messages (stderr, or the progress bar's).
 */
export function createApiContext(
  target: Pick<ApiTarget, 'baseUrl' | 'apiKey'>,
  options: ContextOptions,
  userAgent: string,
  notice: (message: string) => void,
): ApiContext & { client: AttemptClient } {
  const { maxAttempts, maxWaitMs, maxRetryTimeMs, maxWatchMs = DEFAULT_RETRY_POLICY.maxWatchMs, idempotency = DEFAULT_RETRY_POLICY.idempotency } = options;
  return {
    client: new AttemptClient({ baseUrl: target.baseUrl, apiKey: target.apiKey, timeoutMs: options.timeoutMs, userAgent }),
    pacer: new RateLimitPacer(),
    policy: { ...DEFAULT_RETRY_POLICY, maxAttempts, maxWaitMs, maxRetryTimeMs, maxWatchMs, idempotency },
    sleep: (ms: number) => sleep(ms),
    notice,
  };
}
