import type { AttemptResponse, AttemptResult } from './attempt-result.js';
import type { RateLimitPacer } from './rate-limit-pacer.js';

/**
 * How a call takes the server's word on waiting. Either way, a `Retry-After` longer than
 * `maxWaitMs` stops the call, and so does a retry whose wait would end past a time bound
 * (`deadline`, `maxRetryTimeMs`).
 * - `'within-backoff'` (the helpers'): a 429's or 503's `Retry-After` lengthens the backoff of a
 *   retry, and a 429 uses up an attempt. A pacing wait longer than `maxWaitMs` or past a time
 *   bound is not waited: the request is sent, and the 429 it may get says how long.
 * - `'as-asked'` (the partner CLI's): a 429 is waited out for its `Retry-After` (at least 1 s, 5 s
 *   when it names none) and uses up no attempt, so only the time bounds limit how many there are;
 *   every retry waits at least its answer's `Retry-After`, whatever the status; a pacing wait is
 *   waited however long, and one past a time bound stops the call.
 */
export type RetryWaits = 'within-backoff' | 'as-asked';

/** What an answer whose outcome was unknown turned out to mean, once looked into (CallRules.lookUp). */
export type LookedUp<Found> =
  /** the request's outcome, found another way: the call ends with it */
  | { type: 'found'; found: Found }
  /**
   * proof that the request (every attempt of it, under its Idempotency-Key) wrote nothing and never
   * will: it is sent again as after a 503, using up an attempt; `reason` is the failure's words from then on
   */
  | { type: 'nothing-written'; reason: string };

/** What a call allows its retries. */
export interface CallRules<Found = never> {
  /**
   * true when sending again cannot write twice: a read, or a write with an Idempotency-Key
   * reused on every attempt. Only then is an answer whose outcome is unknown (500, 502, 504) or a
   * lost connection retried.
   */
  idempotent: boolean;
  /** no wait ends past it (options.now's clock); WaitTooLongError instead */
  deadline?: number;
  /** the client's pacing by the rate-limit headers: observes every answer, and may wait before an attempt */
  pacer?: RateLimitPacer;
  /**
   * The statuses that answer the call. Given, any other 2xx, and any 5xx but 503, is an answer
   * whose outcome is unknown, retried as a 500 is, rather than the call's answer. Not given: only
   * 500, 502 and 504 are, and any status the rules do not retry answers the call.
   */
  expected?: readonly number[];
  /** no wait ends more than this after the call's first attempt was sent, however few attempts it used */
  maxRetryTimeMs?: number;
  /** default `'within-backoff'` */
  waits?: RetryWaits;
  /**
   * Looks into an answer whose outcome is unknown before the request is sent again (the partner
   * CLI reads the import a 504 names). `endsBy` is when the call must be over (its deadline or
   * maxRetryTimeMs; Infinity without either). Undefined when the answer tells nothing: the rules
   * go on as without it.
   */
  lookUp?: (reply: AttemptResponse, call: { reason: string; endsBy: number }) => Promise<LookedUp<Found> | undefined>;
  /** a failed attempt in words, for onRetry and RetryStop (default: `answered 503`, or the network failure's message) */
  describe?: (failure: AttemptResult) => string;
}
