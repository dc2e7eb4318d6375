import type { ApiContext } from './api-context.js';
import { readingWords } from './call-words.js';
import { FatalError } from './fatal-error.js';
import { refusalOf } from './reply-refusals.js';
import { MAX_REPLY_MIB } from './reply-text.js';
import { sendWithPolicy, stopError } from './send-with-policy.js';

/** What a read came back with: the resource, or 404 (the body says which). */
export type ReadReply = { status: 200; body: unknown } | { status: 404; body: unknown };

/**
 * GETs `path` until the server answers it: 200 or 404. A read writes nothing, so every failure
 * is retried as a batch's 503 is (send-with-policy.ts: backoff, --retries, --max-wait); a 429
 * waits `Retry-After` without using up an attempt. No wait ends past `deadline` (on ctx.now's
 * clock). Stops (FatalError) on 401/402/403, a redirect, another 4xx, or once out of attempts or
 * time. note: its FatalError says `unknown`: a read writes nothing, but the batch whose import is
 * being read may have been written.
 */
export async function readApi(ctx: ApiContext, path: string, deadline: number): Promise<ReadReply> {
  const words = readingWords(path);
  const outcome = await sendWithPolicy(ctx, () => ctx.client.get(path), { idempotent: true, expected: [200, 404], deadline }, words);
  if (outcome.type === 'stopped') throw stopError(outcome, 'unknown', words);
  if (outcome.type === 'found') return outcome.found;
  const { reply } = outcome;
  const { status } = reply;
  if (status === 200 || status === 404) {
    if (reply.tooLarge) throw new FatalError(`the server's ${status} to GET /${path} is larger than ${MAX_REPLY_MIB} MiB, more than any real reply; it was not read`, 'unknown');
    return { status, body: reply.body };
  }
  // note: 401/402/403 (the key, tier or scope) among them: no retry changes those
  throw new FatalError(refusalOf(reply, 'unknown').reason, 'unknown');
}
