import type { ApiContext } from './api-context.js';
import { FatalError } from './fatal-error.js';
import { retryAfterMs } from './rate-limit.js';
import { errorText, MAX_REPLY_MIB } from './reply-text.js';
import { backoffMs, secondsText } from './retry-policy.js';

/** What a read came back with: the resource, or 404 (the body says which). */
export type ReadReply = { status: 200; body: unknown } | { status: 404; body: unknown };

const DEFAULT_RATE_LIMIT_WAIT_MS = 5_000;

/**
 * GETs `path` until the server answers it: 200 or 404. A read writes nothing, so every failure
 * is retried as a batch's 503 is (backoff, --retries, --max-wait); a 429 waits `Retry-After`
 * without using up an attempt. No wait ends past `deadline` (on ctx.now's clock). Stops
 * (FatalError) on 401/402/403, a redirect, another 4xx, or once out of attempts or time. note:
 * its FatalError says `unknown`: a read writes nothing, but the batch whose import is being
 * read may have been written.
 */
export async function readApi(ctx: ApiContext, path: string, deadline: number): Promise<ReadReply> {
  const { policy } = ctx;
  const random = ctx.random ?? Math.random;
  const now = ctx.now ?? Date.now;
  const stop = (message: string) => new FatalError(message, 'unknown');
  const waitWithin = async (wait: number, problem: string, notice: string) => {
    if (now() + wait > deadline) throw stop(`${problem}: waiting ${secondsText(wait)} s more would pass the time allowed (--max-retry-time, --max-watch)`);
    ctx.notice(notice);
    await ctx.sleep(wait);
  };
  let attempt = 0;
  for (;;) {
    const paced = ctx.pacer.delayBeforeNext();
    if (paced > 0) await waitWithin(paced, 'the minute quota is used up', `rate limit: the minute quota is used up; waiting ${secondsText(paced)} s for the next window`);
    attempt += 1;
    const reply = await ctx.client.get(path);
    let problem: string;
    let waitAtLeastMs = 0;
    if (reply.type === 'response') {
      ctx.pacer.observe(reply.sentAt, reply.headers);
      const { status } = reply;
      if (status === 200 || status === 404) {
        if (reply.tooLarge) throw stop(`the server's ${status} to GET /${path} is larger than ${MAX_REPLY_MIB} MiB, more than any real reply; it was not read`);
        return { status, body: reply.body };
      }
      if (status === 429) {
        const retryAfter = retryAfterMs(reply.headers) ?? DEFAULT_RATE_LIMIT_WAIT_MS;
        if (retryAfter > policy.maxWaitMs) throw stop(`429 ${errorText(reply)}: the server asks to wait ${secondsText(retryAfter)} s, more than --max-wait allows`);
        attempt -= 1;
        const wait = Math.max(1_000, retryAfter);
        await waitWithin(wait, `429 ${errorText(reply)}`, `429 ${errorText(reply)}; waiting ${secondsText(wait)} s (Retry-After)`);
        continue;
      }
      if (status >= 300 && status < 400) {
        throw stop(`the server answered ${status} with a redirect to ${reply.headers.get('location') ?? 'nowhere'}; bulk-import never follows redirects (check --base-url)`);
      }
      // note: 401/402/403 (the key, tier or scope) among them: no retry changes those
      if (status >= 400 && status < 500) throw stop(`${status} ${errorText(reply)}`);
      problem = `${status} ${errorText(reply)}`;
      waitAtLeastMs = retryAfterMs(reply.headers) ?? 0;
    } else {
      problem = reply.message;
    }
    if (attempt >= policy.maxAttempts) throw stop(`gave up after ${attempt} attempts to read /${path}: ${problem}`);
    if (waitAtLeastMs > policy.maxWaitMs) throw stop(`${problem}: the server asks to wait ${secondsText(waitAtLeastMs)} s, more than --max-wait allows`);
    const delay = Math.max(backoffMs(policy, attempt, random), waitAtLeastMs);
    await waitWithin(delay, problem, `reading /${path}: attempt ${attempt} of ${policy.maxAttempts} failed (${problem}); retrying in ${secondsText(delay)} s`);
  }
}
