import type { RowError } from '../../shared/rows/row-errors.js';
import type { AttemptResult } from '@bulk-import/client';
import { rowErrorsOfRefusal } from './check-reply.js';
import { FatalError } from './fatal-error.js';
import { retryAfterMs } from './rate-limit.js';
import { errorText } from './reply-text.js';
import { secondsText as seconds } from './retry-policy.js';

/** What the CLI waits after a 429 that says nothing of when to come back. */
const DEFAULT_RATE_LIMIT_WAIT_MS = 5_000;

type Reply = Extract<AttemptResult, { type: 'response' }>;

/**
 * The wait a 429 asks for (`Retry-After`, at least a second), or a FatalError when it is more than
 * `--max-wait` allows; `state` is what became of the request's rows. note: the batches' and the
 * background file's sending share it, so both wait alike.
 */
export function rateLimitWaitMs(reply: Reply, maxWaitMs: number, state: FatalError['batchState']): number {
  const retryAfter = retryAfterMs(reply.headers) ?? DEFAULT_RATE_LIMIT_WAIT_MS;
  if (retryAfter > maxWaitMs) {
    throw new FatalError(`429 ${errorText(reply)}: the server asks to wait ${seconds(retryAfter)} s, more than --max-wait allows`, state);
  }
  return Math.max(1_000, retryAfter);
}

/** A redirect is never followed (a misconfigured --base-url must not send the key elsewhere). */
export function redirectRefused(status: number, reply: Reply, state: FatalError['batchState']): FatalError {
  return new FatalError(
    `the server answered ${status} with a redirect to ${reply.headers.get('location') ?? 'nowhere'}; bulk-import never follows redirects (check --base-url)`,
    state,
  );
}

const AUTH_STATUSES = new Set([401, 402, 403]);

/**
 * What a 4xx answer means for the run: a refused key or tier stops it (FatalError, `state` the
 * rows' fate); any other 4xx refused this request, nothing of it kept: its reason and the failed
 * rows it lists. Undefined for any other status.
 */
export function clientErrorOf(status: number, reply: Reply, state: FatalError['batchState']): { reason: string; rowErrors?: RowError[] } | undefined {
  if (AUTH_STATUSES.has(status)) throw new FatalError(`${status} ${errorText(reply)}`, state);
  if (status < 400 || status >= 500) return undefined;
  const rowErrors = rowErrorsOfRefusal(reply.body);
  return { reason: `${status} ${errorText(reply)}`, ...(rowErrors && rowErrors.length > 0 ? { rowErrors } : {}) };
}
