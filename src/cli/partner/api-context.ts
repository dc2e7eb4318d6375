import type { AttemptClient } from '@bulk-import/client';
import type { RateLimitPacer } from './rate-limit.js';
import type { RetryPolicy } from './retry-policy.js';

/** What every request to the API goes through: the client, the account's pacing, the retry rules. */
export interface ApiContext {
  client: Pick<AttemptClient, 'postBulk' | 'get'>;
  /** one per run: imports and reads share the account's minute quota */
  pacer: RateLimitPacer;
  policy: RetryPolicy;
  sleep(ms: number): Promise<void>;
  /** a line for the user (retries, waits) */
  notice(message: string): void;
  random?: () => number;
  /** the clock --max-retry-time and --max-watch are measured on (Date.now) */
  now?: () => number;
}
