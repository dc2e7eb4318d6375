/**
 * The CLI's retry policy, from its options: what send-with-policy.ts gives the client package's
 * retry rule (sendUntilSettled) as its options.
 */
export interface RetryPolicy {
  /** attempts per batch for network errors and 5xx (429 waits do not count) */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** the longest single wait the CLI accepts (Retry-After of a day quota, an auth lockout) */
  maxWaitMs: number;
  /**
   * the longest the CLI keeps at one batch, from its first attempt: no retry is waited for past
   * it, however many replies say to wait (a storm of 429s does not use up attempts)
   */
  maxRetryTimeMs: number;
  /**
   * the longest the CLI watches an import answered 504 (GET /v1/api/imports/{id}) for it to end,
   * within maxRetryTimeMs
   */
  maxWatchMs: number;
  /** retry replies whose outcome is unknown (5xx other than 503, lost connections): needs Idempotency-Key support */
  idempotency: boolean;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 8,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  maxWaitMs: 15 * 60_000,
  maxRetryTimeMs: 30 * 60_000,
  // note: the API itself watches a job it answered 504 for ten minutes (its in-flight slot is held
  // so long); a job ends within its attempts long before that.
  maxWatchMs: 10 * 60_000,
  idempotency: true,
};

/** A duration in messages: `12.5` (seconds). */
export const secondsText = (ms: number) => (ms / 1000).toFixed(1);
