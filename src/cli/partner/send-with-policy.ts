import { sendUntilSettled, type AttemptResult, type CallRules, type RetryEvent, type RetryOutcome, type RetryStop } from '@bulk-import/client';
import type { ApiContext } from './api-context.js';
import type { CallWords } from './call-words.js';
import { FatalError } from './fatal-error.js';
import { errorText } from './reply-text.js';
import { secondsText as seconds } from './retry-policy.js';

/** A failed attempt in the CLI's words: the status and the server's error text, or the network failure. */
function problemOf(failure: AttemptResult): string {
  return failure.type === 'response' ? `${failure.status} ${errorText(failure)}` : failure.message;
}

function noticeOf(event: RetryEvent, maxAttempts: number, words: CallWords): string {
  switch (event.kind) {
    case 'paced':
      return `rate limit: the minute quota is used up; waiting ${seconds(event.delayMs)} s for the next window`;
    case 'rate-limited':
      return `${event.reason}; waiting ${seconds(event.delayMs)} s (Retry-After)`;
    case 'retry':
      return words.retrying(event, maxAttempts);
  }
}

/** What the caller says of its call; the rest of the rules are the CLI's policy. */
export type CallOf<Found> = Omit<CallRules<Found>, 'pacer' | 'waits' | 'describe'>;

/**
 * Sends one call of the CLI (`send`, a fresh attempt each time) by the client package's retry rule
 * (sendUntilSettled), the CLI's policy given as its options: --retries, --max-wait and the
 * backoff from ctx.policy; every wait as the server asks (`as-asked`: a 429 is waited out without
 * using up an attempt, any retry waits at least its Retry-After); the run's pacer; every retry
 * and wait on stderr (ctx.notice) in `words`. `call` adds the call's own: its idempotency, the
 * statuses that answer it, its time bound and what an unknown outcome is looked up by.
 */
export function sendWithPolicy<Found = never>(ctx: ApiContext, send: () => Promise<AttemptResult>, call: CallOf<Found>, words: CallWords): Promise<RetryOutcome<Found>> {
  const { policy } = ctx;
  const options = {
    maxAttempts: policy.maxAttempts,
    baseDelayMs: policy.baseDelayMs,
    maxDelayMs: policy.maxDelayMs,
    maxWaitMs: policy.maxWaitMs,
    sleep: (ms: number) => ctx.sleep(ms),
    random: ctx.random ?? Math.random,
    now: ctx.now ?? Date.now,
    onRetry: (event: RetryEvent) => ctx.notice(noticeOf(event, policy.maxAttempts, words)),
  };
  return sendUntilSettled(send, options, { ...call, pacer: ctx.pacer, waits: 'as-asked', describe: problemOf });
}

/** Why the run stops, as FatalError; `state` is what became of the rows in hand. */
export function stopError(stop: RetryStop, state: FatalError['batchState'], words: CallWords): FatalError {
  switch (stop.cause) {
    case 'attempts-used-up':
      return new FatalError(words.gaveUp(stop.attempts, stop.reason), state);
    case 'wait-too-long':
      return new FatalError(`${stop.reason}: the server asks to wait ${seconds(stop.waitMs)} s, more than --max-wait allows`, state);
    case 'out-of-time':
      return new FatalError(words.outOfTime(stop), state);
    case 'not-idempotent':
      return new FatalError(words.notRetried(stop.reason), state);
  }
}
