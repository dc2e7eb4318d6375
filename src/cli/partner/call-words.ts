import type { RetryEvent, RetryStop } from '@bulk-import/client';
import type { RetryPolicy } from './retry-policy.js';
import { secondsText as seconds } from './retry-policy.js';

/** How the retries and stops of one kind of call are worded: a batch's, the file's, or a read's. */
export interface CallWords {
  /** a failed attempt about to be retried, for stderr */
  retrying(event: RetryEvent, maxAttempts: number): string;
  gaveUp(attempts: number, reason: string): string;
  /** the next wait would pass the time the call is allowed */
  outOfTime(stop: Extract<RetryStop, { cause: 'out-of-time' }>): string;
  /** an unknown outcome that --no-idempotency keeps from being sent again */
  notRetried(reason: string): string;
}

/** A write's words: `subject` (`this batch`) is what --max-retry-time bounds, `again` (`retrying`) says what a retry does. */
export function sendingWords(subject: string, again: string, policy: Pick<RetryPolicy, 'maxRetryTimeMs'>): CallWords {
  return {
    retrying: (event, maxAttempts) => `attempt ${event.attempt} of ${maxAttempts} failed (${event.reason}); ${again} in ${seconds(event.delayMs)} s`,
    gaveUp: (attempts, reason) => `gave up after ${attempts} attempts: ${reason}`,
    outOfTime: (stop) =>
      `${stop.reason}: still failing after ${seconds(stop.spentMs)} s of retrying ${subject}; waiting ${seconds(stop.waitMs)} s more would pass --max-retry-time (${seconds(policy.maxRetryTimeMs).replace(/\.0$/, '')} s)`,
    notRetried: (reason) => `outcome unknown (${reason}); not retried without idempotency`,
  };
}

/** The words of the whole file's upload (--background), whose unknown outcome stops the run. */
export function uploadWords(policy: Pick<RetryPolicy, 'maxRetryTimeMs'>): CallWords {
  return {
    ...sendingWords('the file', 'sending the file again', policy),
    notRetried: (reason) =>
      `outcome of the upload unknown (${reason}); not retried without idempotency: check "bulk-import imports list" before sending the file again`,
  };
}

/** A read's words (GET `/path`); its time is the deadline it was given (--max-retry-time, --max-watch). */
export function readingWords(path: string): CallWords {
  return {
    retrying: (event, maxAttempts) => `reading /${path}: attempt ${event.attempt} of ${maxAttempts} failed (${event.reason}); retrying in ${seconds(event.delayMs)} s`,
    gaveUp: (attempts, reason) => `gave up after ${attempts} attempts to read /${path}: ${reason}`,
    outOfTime: (stop) => `${stop.reason}: waiting ${seconds(stop.waitMs)} s more would pass the time allowed (--max-retry-time, --max-watch)`,
    notRetried: (reason) => `outcome unknown (${reason}); not retried without idempotency`,
  };
}
