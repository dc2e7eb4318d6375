import { randomUUID } from 'node:crypto';
import type { RowError } from '../../shared/rows/row-errors.js';
import type { AttemptResponse, AttemptResult } from '@bulk-import/client';
import type { ApiContext } from './api-context.js';
import { sendingWords } from './call-words.js';
import { checkBulkReply, type CheckedReply, type ReplyCheck } from './check-reply.js';
import { FatalError } from './fatal-error.js';
import type { UpdateMode } from './import-options.js';
import { lookUpNamedImport } from './look-up-named-import.js';
import { refusalOf } from './reply-refusals.js';
import { MAX_REPLY_MIB } from './reply-text.js';
import { sendWithPolicy, stopError } from './send-with-policy.js';

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
 * delete (removal-command.ts). note: one retry policy, one Idempotency-Key per batch and one watch of
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

/** A bulk import's batch (POST /v1/api/{kind}/bulk, with `update=merge` for a merge, `return=rows` for --results). */
function bulkTarget(ctx: SendContext, kind: string, update: UpdateMode, returnRows: boolean): BatchTarget<CheckedReply> {
  return { kind, writtenStatus: 201, post: (body, key, dryRun) => ctx.client.postBulk(kind, body, key, dryRun, update, returnRows), check: checkBulkReply };
}

/**
 * A 201 (a dry run's 200) checked against the batch it answers. note: one that cannot be believed
 * stops the run: what the server wrote of the batch is unknown, and a server that answers so is
 * not one to send the next batch to.
 */
function believedOutcome<Counts extends { rowErrors: RowError[] }>(target: BatchTarget<Counts>, reply: AttemptResponse, rowCount: number, dryRun: boolean): BatchOutcome<Counts> {
  const answer = dryRun ? `the server's ${reply.status} to a dry run` : `the server's ${reply.status}`;
  if (reply.tooLarge) throw new FatalError(`${answer} is larger than ${MAX_REPLY_MIB} MiB, more than any real reply; it was not read`, 'unknown');
  const check = target.check(reply.body, rowCount, dryRun);
  if (!check.ok) throw new FatalError(`${answer} cannot be believed: ${check.problem}`, 'unknown');
  return { type: 'imported', ...check.reply, replayed: reply.headers.get('idempotent-replayed') === 'true' };
}

/**
 * The statuses that answer a batch: the one that wrote, or a dry run's 200. note: a server that
 * predates dry runs ignores ?dry_run=true and imports, answering 201: taken as an answer, so
 * that the run stops at once rather than retrying it.
 */
function answersOf(target: BatchTarget<{ rowErrors: RowError[] }>, dryRun: boolean): number[] {
  if (!dryRun) return [target.writtenStatus];
  return target.writtenStatus === 201 ? [200, 201] : [200];
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
 *   import (a 504's `import_id`), that import is watched instead (look-up-named-import.ts) until
 *   it ends: `completed` counts as its 201 would have, `failed` (nothing written) is retried as a 503.
 * Running out of attempts, or of --max-retry-time, is fatal: the run stops. The rules are the
 * client package's, with the CLI's policy as their options (send-with-policy.ts).
 * `update` `merge` sends the batch as a merge (--merge); its key is as fresh as any other batch's.
 * `returnRows` asks for each row's id and outcome (--results).
 */
export async function sendBatch(ctx: SendContext, kind: string, body: string, rowCount: number, dryRun = false, update: UpdateMode = 'replace', returnRows = false): Promise<BatchOutcome> {
  return sendToTarget(ctx, bulkTarget(ctx, kind, update, returnRows), body, rowCount, dryRun);
}

/** sendBatch's rules, for a batch to any target (BatchTarget). */
export async function sendToTarget<Counts extends { rowErrors: RowError[] }>(
  ctx: SendContext,
  target: BatchTarget<Counts>,
  body: string,
  rowCount: number,
  dryRun = false,
): Promise<BatchOutcome<Counts>> {
  // note: a dry run writes nothing, so any of its outcomes may be sent again, and it has no import to watch.
  const idempotent = dryRun || ctx.policy.idempotency;
  // note: a fresh random key per batch, never derived from its rows: the same rows sent again,
  // as a merge or whole, are a new request, as the server takes them (it answers 422 to a key
  // reused across update modes).
  const key = idempotent && !dryRun ? randomUUID() : undefined;
  const words = sendingWords('this batch', 'retrying', ctx.policy);
  const outcome = await sendWithPolicy<Counts>(
    ctx,
    () => target.post(body, key, dryRun),
    {
      idempotent,
      expected: answersOf(target, dryRun),
      maxRetryTimeMs: ctx.policy.maxRetryTimeMs,
      ...(dryRun ? {} : { lookUp: (reply, call) => lookUpNamedImport(ctx, { kind: target.kind, rowCount, check: target.check }, reply, call) }),
    },
    words,
  );
  if (outcome.type === 'found') return { type: 'imported', ...outcome.found, replayed: false };
  // note: a dry run never writes, whatever became of it
  const state = outcome.mayHaveWritten && !dryRun ? 'unknown' : 'not-written';
  if (outcome.type === 'stopped') {
    if (outcome.cause === 'not-idempotent') return { type: 'unknown', reason: words.notRetried(outcome.reason) };
    throw stopError(outcome, state, words);
  }
  const { reply } = outcome;
  if (reply.status === (dryRun ? 200 : target.writtenStatus)) return believedOutcome(target, reply, rowCount, dryRun);
  if (dryRun && reply.status === 201) {
    throw new FatalError('the server answered a dry run with 201: it does not know ?dry_run=true and imported this batch; stopping', 'unknown');
  }
  return { type: 'rejected', ...refusalOf(reply, state) };
}
