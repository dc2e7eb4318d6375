import { randomUUID } from 'node:crypto';
import { ImportIdSchema } from '../../shared/api-schemas/import-id.js';
import type { RowError } from '../../shared/rows/row-errors.js';
import type { AttemptResult } from '@bulk-import/client';
import type { ApiContext } from './api-context.js';
import { checkBulkReply, type CheckedReply, type ReplyCheck } from './check-reply.js';
import { FatalError } from './fatal-error.js';
import type { UpdateMode } from './import-options.js';
import { retryAfterMs } from './rate-limit.js';
import { clientErrorOf, rateLimitWaitMs, redirectRefused } from './reply-refusals.js';
import { errorText, MAX_REPLY_MIB } from './reply-text.js';
import { backoffMs, secondsText as seconds } from './retry-policy.js';
import { watchImport, type WatchOutcome } from './watch-import.js';

export { FatalError } from './fatal-error.js';
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry-policy.js';

/** How one batch ended; `Counts` are what its answer counts (a bulk import's: CheckedReply). */
export type BatchOutcome<Counts extends { rowErrors: RowError[] } = CheckedReply> =
  /**
   * 201: the valid rows are in, once; `rowErrors` are the rows the server skipped. For a server
   * dry run (200), what the import would have done; nothing was written.
   */
  | ({ type: 'imported'; replayed: boolean } & Counts)
  /** a 4xx other than 429 (or 400 "no valid rows"): nothing was written, the batch's rows fail */
  | { type: 'rejected'; reason: string; rowErrors?: RowError[] }
  /** the outcome is unknown and may not be retried (`--no-idempotency`); its rows are reported */
  | { type: 'unknown'; reason: string };

/** Everything a batch's requests go through (api-context.ts). */
export type SendContext = ApiContext;

/**
 * Where a batch goes and how its answer is believed: a bulk import (sendBatch), or an archive or
 * delete (send-removal.ts). note: one retry policy, one Idempotency-Key per batch and one watch of
 * an import answered 504 for every kind of batch.
 */
export interface BatchTarget<Counts extends { rowErrors: RowError[] }> {
  /** the import's kind, which a watched import must read */
  kind: string;
  /** the status of an answer that wrote (201 for a bulk import, 200 for an archive or delete); a dry run's is 200 */
  writtenStatus: number;
  /** one attempt */
  post: (body: string, idempotencyKey: string | undefined, dryRun: boolean) => Promise<AttemptResult>;
  /** an answer (or a watched import's counts and failed rows), checked against the `rowsSent` of the batch */
  check: (body: unknown, rowsSent: number, dryRun: boolean) => ReplyCheck<Counts>;
}

/** A bulk import's batch (POST /v1/api/{kind}/bulk, with `update=merge` for a merge). */
function bulkTarget(ctx: SendContext, kind: string, update: UpdateMode): BatchTarget<CheckedReply> {
  return { kind, writtenStatus: 201, post: (body, key, dryRun) => ctx.client.postBulk(kind, body, key, dryRun, update), check: checkBulkReply };
}


/**
 * A 201 (a dry run's 200) checked against the batch it answers. note: one that cannot be believed
 * stops the run: what the server wrote of the batch is unknown, and a server that answers so is
 * not one to send the next batch to.
 */
function believedOutcome<Counts extends { rowErrors: RowError[] }>(
  target: BatchTarget<Counts>,
  reply: Extract<AttemptResult, { type: 'response' }>,
  rowCount: number,
  dryRun: boolean,
): BatchOutcome<Counts> {
  const answer = dryRun ? `the server's ${reply.status} to a dry run` : `the server's ${reply.status}`;
  if (reply.tooLarge) throw new FatalError(`${answer} is larger than ${MAX_REPLY_MIB} MiB, more than any real reply; it was not read`, 'unknown');
  const check = target.check(reply.body, rowCount, dryRun);
  if (!check.ok) throw new FatalError(`${answer} cannot be believed: ${check.problem}`, 'unknown');
  return { type: 'imported', ...check.reply, replayed: reply.headers.get('idempotent-replayed') === 'true' };
}

/** The import a reply names (`import_id`), when it names one. */
function importIdOf(body: unknown): string | undefined {
  const id = typeof body === 'object' && body !== null ? (body as { import_id?: unknown }).import_id : undefined;
  return ImportIdSchema.safeParse(id).success ? (id as string) : undefined;
}

/**
 * Watches the import a reply named (watch-import.ts) for at most --max-watch, and never past
 * `retryEnd` (--max-retry-time), saying so on stderr.
 */
async function watchNamedImport<Counts extends { rowErrors: RowError[] }>(
  ctx: SendContext,
  target: BatchTarget<Counts>,
  batch: { importId: string; kind: string; rowCount: number; retryEnd: number },
  problem: string,
): Promise<WatchOutcome<Counts>> {
  const { importId, retryEnd } = batch;
  const now = ctx.now ?? Date.now;
  const watchEnd = now() + ctx.policy.maxWatchMs;
  const deadline = Math.min(watchEnd, retryEnd);
  ctx.notice(`${problem}: watching import ${importId} until it ends (at most ${seconds(deadline - now())} s)`);
  const watched = await watchImport(ctx, { ...batch, deadline, limit: watchEnd <= retryEnd ? '--max-watch' : '--max-retry-time' }, target.check);
  if (watched.state === 'completed') ctx.notice(`import ${importId} completed: its rows are counted once, as it wrote them`);
  return watched;
}

/**
 * Sends one batch until it has a final outcome. One Idempotency-Key per batch, reused on every
 * retry, so a retry after a lost reply replays the first result instead of inserting again.
 * A server dry run (`dryRun`) carries no key and expects 200: it writes nothing, so every
 * outcome may be retried.
 * - 201: imported, once it accounts for the `rowCount` rows sent (check-reply.ts); one that does
 *   not, or is too large to read, is fatal with the batch's outcome unknown.
 * - 429: wait `Retry-After`, then again. 401/402/403 and any redirect: fatal.
 * - other 4xx: the batch is rejected (the server wrote nothing).
 * - 503 or a connection never made: nothing was written; retried with backoff.
 * - other 5xx, a dropped connection or a timeout: the outcome is unknown; retried with the same
 *   key, or, without idempotency, reported as unknown and not retried. When the reply names its
 *   import (a 504's `import_id`), that import is watched instead (watch-import.ts) until it ends:
 *   `completed` counts as its 201 would have, `failed` (nothing written) is retried as a 503.
 * Running out of attempts, or of --max-retry-time, is fatal: the run stops.
 * `update` `merge` sends the batch as a merge (--merge); its key is as fresh as any other batch's.
 */
export async function sendBatch(ctx: SendContext, kind: string, body: string, rowCount: number, dryRun = false, update: UpdateMode = 'replace'): Promise<BatchOutcome> {
  return sendToTarget(ctx, bulkTarget(ctx, kind, update), body, rowCount, dryRun);
}

/** sendBatch's rules, for a batch to any target (BatchTarget). */
export async function sendToTarget<Counts extends { rowErrors: RowError[] }>(
  ctx: SendContext,
  target: BatchTarget<Counts>,
  body: string,
  rowCount: number,
  dryRun = false,
): Promise<BatchOutcome<Counts>> {
  const { kind } = target;
  const policy = dryRun ? { ...ctx.policy, idempotency: true } : ctx.policy;
  const random = ctx.random ?? Math.random;
  const now = ctx.now ?? Date.now;
  // note: a fresh random key per batch, never derived from its rows: the same rows sent again,
  // as a merge or whole, are a new request, as the server takes them (it answers 422 to a key
  // reused across update modes).
  const key = policy.idempotency && !dryRun ? randomUUID() : undefined;
  let attempt = 0;
  let mayHaveWritten = false;
  let firstSentAt: number | undefined;
  /** Stops the run when waiting `wait` more would keep at this batch past --max-retry-time. */
  const withinRetryTime = (wait: number, problem: string) => {
    const spent = now() - (firstSentAt ?? now());
    if (spent + wait <= policy.maxRetryTimeMs) return;
    throw new FatalError(
      `${problem}: still failing after ${seconds(spent)} s of retrying this batch; waiting ${seconds(wait)} s more would pass --max-retry-time (${seconds(policy.maxRetryTimeMs).replace(/\.0$/, '')} s)`,
      mayHaveWritten ? 'unknown' : 'not-written',
    );
  };
  for (;;) {
    const paced = ctx.pacer.delayBeforeNext();
    if (paced > 0) {
      if (firstSentAt !== undefined) withinRetryTime(paced, 'the minute quota is used up');
      ctx.notice(`rate limit: the minute quota is used up; waiting ${seconds(paced)} s for the next window`);
      await ctx.sleep(paced);
    }
    attempt += 1;
    firstSentAt ??= now();
    const reply = await target.post(body, key, dryRun);
    let problem: string;
    let delivered: boolean;
    let waitAtLeastMs = 0;
    if (reply.type === 'response') {
      ctx.pacer.observe(reply.sentAt, reply.headers);
      const { status } = reply;
      if (status === (dryRun ? 200 : target.writtenStatus)) return believedOutcome(target, reply, rowCount, dryRun);
      if (dryRun && status === 201 && target.writtenStatus === 201) {
        // note: a server that predates dry runs ignores ?dry_run=true and imports; never again
        throw new FatalError('the server answered a dry run with 201: it does not know ?dry_run=true and imported this batch; stopping', 'unknown');
      }
      if (status === 429) {
        const wait = rateLimitWaitMs(reply, policy.maxWaitMs, mayHaveWritten ? 'unknown' : 'not-written');
        // note: a refused request does not use up an attempt (--max-retry-time bounds how many
        // there can be).
        attempt -= 1;
        withinRetryTime(wait, `429 ${errorText(reply)}`);
        ctx.notice(`429 ${errorText(reply)}; waiting ${seconds(wait)} s (Retry-After)`);
        await ctx.sleep(wait);
        continue;
      }
      if (status >= 300 && status < 400) throw redirectRefused(status, reply, mayHaveWritten ? 'unknown' : 'not-written');
      const refused = clientErrorOf(status, reply, mayHaveWritten ? 'unknown' : 'not-written');
      if (refused) return { type: 'rejected', ...refused };
      problem = `${status} ${errorText(reply)}`;
      // note: every 503 of this API means nothing was written (docs/errors.md#what-was-written).
      delivered = status !== 503;
      waitAtLeastMs = retryAfterMs(reply.headers) ?? 0;
      const importId = delivered && !dryRun ? importIdOf(reply.body) : undefined;
      if (importId !== undefined) {
        // note: the reply names the import whose outcome it does not know (a 504): the import
        // resource will tell, so the CLI reads it instead of guessing by sending again.
        const watched = await watchNamedImport(ctx, target, { importId, kind, rowCount, retryEnd: firstSentAt + policy.maxRetryTimeMs }, problem);
        if (watched.state === 'completed') return { type: 'imported', ...watched.reply, replayed: false };
        // note: `failed` is the server's proof that this key's import wrote nothing and never
        // will; the batch is sent again as after a 503, the key's claim released.
        problem = `${problem}; import ${importId} then failed: nothing was written`;
        delivered = false;
        mayHaveWritten = false;
      }
    } else {
      problem = reply.message;
      delivered = reply.delivered;
    }
    if (delivered) {
      // note: a dry run never writes, whatever became of it
      mayHaveWritten = !dryRun;
      if (!policy.idempotency) return { type: 'unknown', reason: `outcome unknown (${problem}); not retried without idempotency` };
    }
    if (attempt >= policy.maxAttempts) {
      throw new FatalError(`gave up after ${attempt} attempts: ${problem}`, mayHaveWritten ? 'unknown' : 'not-written');
    }
    if (waitAtLeastMs > policy.maxWaitMs) {
      throw new FatalError(`${problem}: the server asks to wait ${seconds(waitAtLeastMs)} s, more than --max-wait allows`, mayHaveWritten ? 'unknown' : 'not-written');
    }
    const delay = Math.max(backoffMs(policy, attempt, random), waitAtLeastMs);
    withinRetryTime(delay, problem);
    ctx.notice(`attempt ${attempt} of ${policy.maxAttempts} failed (${problem}); retrying in ${seconds(delay)} s`);
    await ctx.sleep(delay);
  }
}
