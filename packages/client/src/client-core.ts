import type { AttemptClient } from './attempt-client.js';
import type { AttemptResult } from './attempt-result.js';
import { ApiError } from './errors/api-error.js';
import { ReplyError } from './errors/reply-error.js';
import type { RateLimitPacer } from './rate-limit-pacer.js';
import type { RetryOptions } from './retry-options.js';
import type { CallRules } from './call-rules.js';
import { sendWithRetries } from './send-with-retries.js';

/** What every helper of createClient calls through: one attempt layer, one set of retry rules. */
export interface ClientCore {
  attempts: AttemptClient;
  retry: RetryOptions;
  /** one per client: its calls share the account's minute quota */
  pacer: RateLimitPacer;
}

/** An answer of the status a call expects, its body a JSON object. */
export interface Answer<Body> {
  status: number;
  body: Body;
  headers: Headers;
}

/**
 * Sends with retries (sendWithRetries) and keeps only an `expected` answer: any other status is
 * an ApiError, an expected one too large to read or not a JSON object a ReplyError. `what` names
 * the call in messages (`POST /v1/api/listings/bulk`). note: the body is typed from the
 * document, not checked field by field: the package carries no schema library, and the service's
 * tests check every answer against the document.
 */
export async function expectAnswer<Body>(
  core: ClientCore,
  send: () => Promise<AttemptResult>,
  rules: CallRules,
  expected: readonly number[],
  what: string,
): Promise<Answer<Body>> {
  const reply = await sendWithRetries(send, core.retry, { ...rules, pacer: core.pacer });
  if (!expected.includes(reply.status)) throw new ApiError(reply.status, reply.body, reply.headers, what);
  if (reply.tooLarge) throw new ReplyError(reply.status, `${what}: the ${reply.status} is larger than the reply limit; it was not read`);
  if (typeof reply.body !== 'object' || reply.body === null) throw new ReplyError(reply.status, `${what}: the ${reply.status} is not a JSON object`);
  return { status: reply.status, body: reply.body as Body, headers: reply.headers };
}
