import type { AttemptResponse, AttemptResult } from './attempt-result.js';
import { backoffMs } from './backoff.js';
import { NetworkError } from './errors/network-error.js';
import { WaitTooLongError } from './errors/wait-too-long-error.js';
import { retryAfterMs } from './retry-after.js';
import type { RateLimitPacer } from './rate-limit-pacer.js';
import type { RetryOptions } from './retry-options.js';

/** What a call allows its retries. */
export interface CallRules {
  /**
   * true when sending again cannot write twice: a read, or a write with an Idempotency-Key
   * reused on every attempt. Only then are a 500, 502, 504 or a lost connection retried.
   */
  idempotent: boolean;
  /** no wait ends past it (options.now's clock); WaitTooLongError instead */
  deadline?: number;
  /** the client's pacing by the rate-limit headers: observes every answer, and may wait before an attempt */
  pacer?: RateLimitPacer;
}

// note: every 429 and 503 of this API wrote nothing (docs/errors.md#what-was-written): always retried.
const NOTHING_WRITTEN = new Set([429, 503]);
const OUTCOME_UNKNOWN = new Set([500, 502, 504]);

/**
 * Waits for the next minute window when the last answer used up the account's minute quota.
 * note: a wait past `maxWaitMs` or the deadline is not waited: the request is sent, and the 429
 * it may get says how long, which the retry rules then judge.
 */
async function paceBefore(options: RetryOptions, rules: CallRules): Promise<void> {
  const paced = rules.pacer?.delayBeforeNext() ?? 0;
  if (paced <= 0 || paced > options.maxWaitMs) return;
  if (rules.deadline !== undefined && options.now() + paced > rules.deadline) return;
  options.onRetry?.({ attempt: 0, delayMs: paced, status: undefined, reason: 'the minute quota is used up: waiting for the next window' });
  await options.sleep(paced);
}

/**
 * Sends (`send`, a fresh attempt each time) until the answer is final, and returns it, whatever
 * its status: a 429 or 503 is waited out (its `Retry-After`, at least the backoff; longer than
 * `maxWaitMs` is refused), a 5xx or a lost connection retried only when `idempotent`; with a
 * `pacer`, an attempt that would meet a used-up minute quota first waits for the next window. Throws
 * NetworkError when no answer came, WaitTooLongError when a wait would pass a bound; the last
 * retryable answer is returned once the attempts are used up.
 */
export async function sendWithRetries(send: () => Promise<AttemptResult>, options: RetryOptions, rules: CallRules): Promise<AttemptResponse> {
  let mayHaveArrived = false;
  for (let attempt = 1; ; attempt += 1) {
    await paceBefore(options, rules);
    const sentAt = options.now();
    const reply = await send();
    if (reply.type === 'response') rules.pacer?.observe(sentAt, reply.headers);
    let delayMs = backoffMs(options, attempt, options.random);
    if (reply.type === 'network') {
      mayHaveArrived ||= reply.delivered;
      if ((reply.delivered && !rules.idempotent) || attempt >= options.maxAttempts) {
        throw new NetworkError(`no answer after ${attempt} attempt(s): ${reply.message}`, mayHaveArrived, attempt);
      }
    } else {
      const { status } = reply;
      // note: an answer whose outcome is unknown came from a server that read the request, so a
      // NetworkError later in the call cannot say it was never delivered.
      mayHaveArrived ||= OUTCOME_UNKNOWN.has(status);
      const retryable = NOTHING_WRITTEN.has(status) || (rules.idempotent && OUTCOME_UNKNOWN.has(status));
      if (!retryable || attempt >= options.maxAttempts) return reply;
      const asked = retryAfterMs(reply.headers, options.now());
      if (asked !== undefined && NOTHING_WRITTEN.has(status)) {
        if (asked > options.maxWaitMs) throw new WaitTooLongError(status, asked, options.maxWaitMs);
        delayMs = Math.max(delayMs, asked);
      }
    }
    if (rules.deadline !== undefined && options.now() + delayMs > rules.deadline) {
      throw new WaitTooLongError(reply.type === 'response' ? reply.status : 0, delayMs, Math.max(0, rules.deadline - options.now()));
    }
    options.onRetry?.({ attempt, delayMs, status: reply.type === 'response' ? reply.status : undefined, reason: reply.type === 'response' ? `answered ${reply.status}` : reply.message });
    await options.sleep(delayMs);
  }
}
