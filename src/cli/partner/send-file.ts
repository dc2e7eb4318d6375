import { randomUUID } from 'node:crypto';
import type { RowError } from '../../shared/rows/row-errors.js';
import type { AttemptClient } from '@bulk-import/client';
import type { ApiContext } from './api-context.js';
import type { FileBody } from './file-body.js';
import { FatalError } from './fatal-error.js';
import type { FileImportOptions } from './import-options.js';
import { believedImport, type Import } from './import-resource.js';
import { retryAfterMs } from './rate-limit.js';
import { clientErrorOf, rateLimitWaitMs, redirectRefused } from './reply-refusals.js';
import { errorText } from './reply-text.js';
import { backoffMs, secondsText as seconds } from './retry-policy.js';

/** What a whole file's upload came to: the import it became, or a refusal that kept nothing. */
export type FileOutcome =
  | { type: 'accepted'; import: Import; replayed: boolean }
  /** a 4xx other than 429 (400, 413, 415, 422): nothing was kept; `rowErrors` the first failed rows of `no valid rows` */
  | { type: 'refused'; reason: string; rowErrors?: RowError[] };

/** Everything the upload goes through: the API context, with a client that can send a file. */
export type FileSendContext = ApiContext & { client: Pick<AttemptClient, 'postFile' | 'get'> };


/**
 * Sends a whole file (POST /v1/api/imports?kind=...) until it has an answer, with a batch's retry
 * rules (send-batch.ts): one Idempotency-Key for the file, reused on every retry, so a retry after
 * a lost reply is answered with the import the first attempt made. Each attempt reads the file
 * again from its start (`body.open()`), with the same `options` (update, mirror) in its query:
 * the server compares them with the key's first request.
 * - 202: the import, whose shape is checked.
 * - 429 (`Too many file imports in progress`, a quota): wait `Retry-After`, then again; not an attempt.
 * - 503 or a connection never made: nothing was kept; retried with backoff.
 * - other 5xx, a dropped connection, a timeout: unknown; retried with the same key, or, without
 *   idempotency, fatal with the outcome unknown.
 * - 401/402/403, a redirect, out of attempts or of --max-retry-time: fatal.
 * - other 4xx: refused as a whole, nothing kept.
 */
export async function sendFile(ctx: FileSendContext, kind: string, body: FileBody, options: FileImportOptions = {}): Promise<FileOutcome> {
  const { policy } = ctx;
  const random = ctx.random ?? Math.random;
  const now = ctx.now ?? Date.now;
  const key = policy.idempotency ? randomUUID() : undefined;
  let attempt = 0;
  let mayHaveKept = false;
  const firstSentAt = now();
  const state = () => (mayHaveKept ? 'unknown' : 'not-written');
  const withinRetryTime = (wait: number, problem: string) => {
    const spent = now() - firstSentAt;
    if (spent + wait <= policy.maxRetryTimeMs) return;
    throw new FatalError(
      `${problem}: still failing after ${seconds(spent)} s of retrying the file; waiting ${seconds(wait)} s more would pass --max-retry-time (${seconds(policy.maxRetryTimeMs).replace(/\.0$/, '')} s)`,
      state(),
    );
  };
  for (;;) {
    const paced = ctx.pacer.delayBeforeNext();
    if (paced > 0) {
      withinRetryTime(paced, 'the minute quota is used up');
      ctx.notice(`rate limit: the minute quota is used up; waiting ${seconds(paced)} s for the next window`);
      await ctx.sleep(paced);
    }
    attempt += 1;
    const reply = await ctx.client.postFile(kind, body.contentType, body.open(), key, options);
    let problem: string;
    let delivered: boolean;
    let waitAtLeastMs = 0;
    if (reply.type === 'response') {
      ctx.pacer.observe(reply.sentAt, reply.headers);
      const { status } = reply;
      if (status === 202) {
        const found = typeof reply.body === 'object' && reply.body !== null ? (reply.body as { import?: unknown }).import : undefined;
        return { type: 'accepted', import: believedImport(found, 'the file\'s import'), replayed: reply.headers.get('idempotent-replayed') === 'true' };
      }
      if (status === 429) {
        const wait = rateLimitWaitMs(reply, policy.maxWaitMs, state());
        attempt -= 1;
        withinRetryTime(wait, `429 ${errorText(reply)}`);
        ctx.notice(`429 ${errorText(reply)}; waiting ${seconds(wait)} s (Retry-After)`);
        await ctx.sleep(wait);
        continue;
      }
      if (status >= 300 && status < 400) throw redirectRefused(status, reply, state());
      const refused = clientErrorOf(status, reply, state());
      if (refused) return { type: 'refused', ...refused };
      problem = `${status} ${errorText(reply)}`;
      // note: every 503 of this API means nothing was kept (docs/errors.md#what-was-written).
      delivered = status !== 503;
      waitAtLeastMs = retryAfterMs(reply.headers) ?? 0;
    } else {
      problem = reply.message;
      delivered = reply.delivered;
    }
    if (delivered) {
      mayHaveKept = true;
      if (!policy.idempotency) {
        throw new FatalError(`outcome of the upload unknown (${problem}); not retried without idempotency: check "bulk-import imports list" before sending the file again`, 'unknown');
      }
    }
    if (attempt >= policy.maxAttempts) throw new FatalError(`gave up after ${attempt} attempts: ${problem}`, state());
    if (waitAtLeastMs > policy.maxWaitMs) {
      throw new FatalError(`${problem}: the server asks to wait ${seconds(waitAtLeastMs)} s, more than --max-wait allows`, state());
    }
    const delay = Math.max(backoffMs(policy, attempt, random), waitAtLeastMs);
    withinRetryTime(delay, problem);
    ctx.notice(`attempt ${attempt} of ${policy.maxAttempts} failed (${problem}); sending the file again in ${seconds(delay)} s`);
    await ctx.sleep(delay);
  }
}
