import type { AttemptResponse, AttemptResult } from './attempt-result.js';
import { backoffMs } from './backoff.js';
import type { CallRules } from './call-rules.js';
import { NetworkError } from './errors/network-error.js';
import { WaitTooLongError } from './errors/wait-too-long-error.js';
import { retryAfterMs } from './retry-after.js';
import type { RetryEvent, RetryOptions } from './retry-options.js';
import type { RetryOutcome, RetryStop, StopCause } from './retry-outcome.js';

// note: every 429 and 503 of this API wrote nothing (docs/errors.md#what-was-written): always retried.
const NOTHING_WRITTEN = new Set([429, 503]);
const OUTCOME_UNKNOWN = new Set([500, 502, 504]);
/** A 429 waited out `as-asked`: at least a second, and 5 s when it does not say how long. */
const RATE_LIMIT_WAIT = { leastMs: 1_000, unsaidMs: 5_000 };
const QUOTA_USED_UP = 'the minute quota is used up';

type Verdict = 'answer' | 'rate-limited' | 'nothing-written' | 'outcome-unknown';

/** What an answer's status means for the call: its answer, or a failure to retry. */
function verdictOf(status: number, expected: readonly number[] | undefined): Verdict {
  if (expected?.includes(status)) return 'answer';
  if (status === 429) return 'rate-limited';
  if (NOTHING_WRITTEN.has(status)) return 'nothing-written';
  if (OUTCOME_UNKNOWN.has(status)) return 'outcome-unknown';
  // note: a call that names its answers takes any other 2xx or 5xx (a proxy's, say) for a failure
  // whose outcome is unknown, never for its answer.
  return expected !== undefined && (status < 300 || status >= 500) ? 'outcome-unknown' : 'answer';
}

const describeFailure = (failure: AttemptResult) => (failure.type === 'response' ? `answered ${failure.status}` : failure.message);

/**
 * The retry rule: sends (`send`, a fresh attempt each time) until the call is settled, and says
 * how (RetryOutcome). A 429 or 503 wrote nothing and is retried; a 500, 502, 504 or a lost
 * connection may have written, and is retried only when `idempotent` (after `lookUp`, when
 * given); any other status answers the call (CallRules.expected narrows that). Waits are the
 * backoff and what the server asks (CallRules.waits), each bounded by `maxWaitMs`, the deadline
 * and maxRetryTimeMs; with a `pacer`, an attempt that would meet a used-up minute quota first
 * waits for the next window. Never throws but what `send`, `lookUp` or `sleep` throw.
 */
export async function sendUntilSettled<Found = never>(send: () => Promise<AttemptResult>, options: RetryOptions, rules: CallRules<Found>): Promise<RetryOutcome<Found>> {
  const asAsked = rules.waits === 'as-asked';
  const describe = rules.describe ?? describeFailure;
  let attempts = 0;
  let mayHaveWritten = false;
  let firstSentAt: number | undefined;
  let last: AttemptResult | undefined;
  const stopped = (stop: StopCause, reason: string): RetryStop => ({ type: 'stopped', ...stop, reason, attempts, last, mayHaveWritten });
  const endsBy = () => Math.min(rules.deadline ?? Infinity, (firstSentAt ?? Infinity) + (rules.maxRetryTimeMs ?? Infinity));
  /** The stop when a wait of `waitMs` would end past the call's time bounds. */
  const pastBounds = (waitMs: number, reason: string): RetryStop | undefined => {
    const now = options.now();
    const end = endsBy();
    if (now + waitMs <= end) return undefined;
    return stopped({ cause: 'out-of-time', waitMs, allowedMs: Math.max(0, end - now), spentMs: now - (firstSentAt ?? now) }, reason);
  };
  const wait = async (event: RetryEvent) => {
    options.onRetry?.(event);
    await options.sleep(event.delayMs);
  };
  for (;;) {
    const paced = rules.pacer?.delayBeforeNext() ?? 0;
    if (paced > 0) {
      const late = pastBounds(paced, QUOTA_USED_UP);
      if (late !== undefined && asAsked) return late;
      // note: within the backoff, a pacing wait too long is not waited: the request is sent, and
      // the 429 it may get says how long, which the rules then judge.
      if (late === undefined && (asAsked || paced <= options.maxWaitMs)) {
        await wait({ kind: 'paced', attempt: 0, delayMs: paced, status: undefined, reason: `${QUOTA_USED_UP}: waiting for the next window` });
      }
    }
    attempts += 1;
    firstSentAt ??= options.now();
    // note: on the pacer's own clock, which need not be options.now (a test's).
    const sentAt = rules.pacer?.now();
    const reply = await send();
    last = reply;
    let reason = describe(reply);
    let delayMs = backoffMs(options, attempts, options.random);
    if (reply.type === 'network') {
      mayHaveWritten ||= reply.delivered;
      if (reply.delivered && !rules.idempotent) return stopped({ cause: 'not-idempotent' }, reason);
      if (attempts >= options.maxAttempts) return stopped({ cause: 'attempts-used-up' }, reason);
    } else {
      if (sentAt !== undefined) rules.pacer?.observe(sentAt, reply.headers);
      let verdict = verdictOf(reply.status, rules.expected);
      if (verdict === 'answer') return { type: 'answered', reply, mayHaveWritten };
      const asked = retryAfterMs(reply.headers, options.now());
      if (verdict === 'rate-limited' && asAsked) {
        // note: a refused request uses up no attempt: the time bounds limit how many there are.
        attempts -= 1;
        const waitMs = asked ?? RATE_LIMIT_WAIT.unsaidMs;
        if (waitMs > options.maxWaitMs) return stopped({ cause: 'wait-too-long', waitMs, allowedMs: options.maxWaitMs }, reason);
        const rateLimited = { kind: 'rate-limited', attempt: attempts, delayMs: Math.max(RATE_LIMIT_WAIT.leastMs, waitMs), status: reply.status, reason } as const;
        const late = pastBounds(rateLimited.delayMs, reason);
        if (late !== undefined) return late;
        await wait(rateLimited);
        continue;
      }
      if (verdict === 'outcome-unknown') {
        mayHaveWritten = true;
        const found = await rules.lookUp?.(reply, { reason, endsBy: endsBy() });
        if (found?.type === 'found') return found;
        if (found?.type === 'nothing-written') {
          ({ reason } = found);
          mayHaveWritten = false;
          verdict = 'nothing-written';
        } else if (!rules.idempotent) return stopped({ cause: 'not-idempotent' }, reason);
      }
      if (attempts >= options.maxAttempts) return stopped({ cause: 'attempts-used-up' }, reason);
      // note: within the backoff, only an answer that wrote nothing is waited out as it asks.
      if (asked !== undefined && (asAsked || verdict !== 'outcome-unknown')) {
        if (asked > options.maxWaitMs) return stopped({ cause: 'wait-too-long', waitMs: asked, allowedMs: options.maxWaitMs }, reason);
        delayMs = Math.max(delayMs, asked);
      }
    }
    const late = pastBounds(delayMs, reason);
    if (late !== undefined) return late;
    await wait({ kind: 'retry', attempt: attempts, delayMs, status: reply.type === 'response' ? reply.status : undefined, reason });
  }
}

/**
 * The helpers' reading of a stop: the last answer when there is one to give (attempts used up, or
 * an unknown outcome not retried), WaitTooLongError past a bound, NetworkError when no answer came.
 */
function answerOrError(stop: RetryStop): AttemptResponse {
  const { last } = stop;
  if (stop.cause === 'wait-too-long' || stop.cause === 'out-of-time') throw new WaitTooLongError(last?.type === 'response' ? last.status : 0, stop.waitMs, stop.allowedMs);
  if (last === undefined || last.type === 'network') {
    throw new NetworkError(`no answer after ${stop.attempts} attempt(s): ${last?.message ?? stop.reason}`, stop.mayHaveWritten, stop.attempts);
  }
  return last;
}

/**
 * sendUntilSettled for the helpers: returns the final answer, whatever its status (the last
 * retryable one once the attempts are used up); throws NetworkError when no answer came,
 * WaitTooLongError when a wait would pass a bound.
 */
export async function sendWithRetries(send: () => Promise<AttemptResult>, options: RetryOptions, rules: CallRules): Promise<AttemptResponse> {
  const outcome = await sendUntilSettled(send, options, rules);
  if (outcome.type === 'answered') return outcome.reply;
  if (outcome.type === 'found') return outcome.found;
  return answerOrError(outcome);
}
