import type { RowError } from '../../shared/rows/row-errors.js';
import type { AttemptResponse } from '@bulk-import/client';
import { rowErrorsOfRefusal } from './check-reply.js';
import { FatalError } from './fatal-error.js';
import { errorText } from './reply-text.js';

/** A redirect is never followed (a misconfigured --base-url must not send the key elsewhere). */
function redirectRefused(status: number, reply: AttemptResponse, state: FatalError['batchState']): FatalError {
  return new FatalError(
    `the server answered ${status} with a redirect to ${reply.headers.get('location') ?? 'nowhere'}; bulk-import never follows redirects (check --base-url)`,
    state,
  );
}

const AUTH_STATUSES = new Set([401, 402, 403]);

/**
 * What a final answer other than the one expected means for the run (the retry rule sends again
 * whatever it may: what is left is a redirect or a 4xx). A redirect or a refused key, tier or
 * scope stops it (FatalError, `state` the rows' fate); any other answer refused this request,
 * nothing of it kept: its reason and the failed rows it lists.
 */
export function refusalOf(reply: AttemptResponse, state: FatalError['batchState']): { reason: string; rowErrors?: RowError[] } {
  const { status } = reply;
  if (status >= 300 && status < 400) throw redirectRefused(status, reply, state);
  if (AUTH_STATUSES.has(status)) throw new FatalError(`${status} ${errorText(reply)}`, state);
  const rowErrors = rowErrorsOfRefusal(reply.body);
  return { reason: `${status} ${errorText(reply)}`, ...(rowErrors && rowErrors.length > 0 ? { rowErrors } : {}) };
}
