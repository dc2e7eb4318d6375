import { randomUUID } from 'node:crypto';
import type { AnyNewImport } from '../../shared/import/import-queue.js';
import type { AnyImportResult } from '../../shared/import/row-removal-job.js';
import { claimIdempotencyKey, releaseIdempotencyKey } from '../../shared/repositories/idempotency-keys.js';
import { findImportRecord } from '../../shared/repositories/import-records.js';
import type { Sql, TransactionSql } from '../../shared/infra/db.js';
import { IdempotencyKeyReusedError, ImportNotWrittenError, ImportOutcomeUnknownError } from './import-errors.js';
import type { ImportRunner } from './import-runner.js';

/** Runs `step`; an error other than the import's own outcomes becomes ImportOutcomeUnknownError. */
async function asOutcomeUnknown<T>(requestId: string, importId: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof ImportNotWrittenError || error instanceof ImportOutcomeUnknownError) throw error;
    throw new ImportOutcomeUnknownError(requestId, importId, Promise.resolve(), { cause: error });
  }
}

/** What a request's claim of its Idempotency-Key found: the key is this request's, or an earlier request's with the same body. */
export type KeyClaim = { type: 'claimed'; importId: string } | { type: 'earlier'; importId: string };

/**
 * Claims `key` for the request whose hash is `hash`, as the import `importId`; or finds the
 * earlier request that claimed it with the same hash, whose import is the answer. A claim with
 * another hash is the key reused for another request: IdempotencyKeyReusedError (422). note: the
 * one rule of a claim, for bulk requests (here, on the pool) and for files (in their acceptance's
 * transaction).
 */
export async function claimIdempotencyKeyFor(
  sql: Sql | TransactionSql,
  input: { accountId: string; key: string; hash: Buffer; importId: string },
): Promise<KeyClaim> {
  const claim = await claimIdempotencyKey(sql, { accountId: input.accountId, key: input.key, requestHash: input.hash, importId: input.importId });
  if (claim.claimed) return { type: 'claimed', importId: claim.importId };
  if (!claim.requestHash.equals(input.hash)) throw new IdempotencyKeyReusedError();
  return { type: 'earlier', importId: claim.importId };
}

/** Claims in a row that may find an earlier failed import before this request gives up. */
const CLAIM_ATTEMPTS = 3;

/**
 * Runs an import under an Idempotency-Key: the first request claims the key and runs; a repeat
 * with the same body replays the recorded result, or waits for the first run when it is still
 * going, and never inserts again; a repeat with another body is refused (422). Returns the
 * import's id, the same for every repeat: the one the claim holds.
 */
export async function runIdempotentImport(
  sql: Sql,
  runner: ImportRunner,
  data: AnyNewImport,
  key: string,
  hash: Buffer,
): Promise<{ importId: string; result: AnyImportResult; replayed: boolean }> {
  const { accountId } = data;
  // note: the runner throws ImportNotWrittenError only once the job's record proves it wrote
  // nothing and never will, so the claim is released then, and a retry runs afresh under a new
  // import id. Releasing by the import's id is safe even while another request rejoins its job:
  // it can no longer write. Any other error keeps the claim: a job whose add timed out (a Redis
  // failover) may still run, and a retry must rejoin that job, under its id, rather than start a
  // second.
  const releasingOnFailure = async (importId: string, run: () => Promise<AnyImportResult>): Promise<AnyImportResult> => {
    try {
      return await run();
    } catch (error) {
      if (error instanceof ImportNotWrittenError) await releaseIdempotencyKey(sql, { accountId, key, importId });
      throw error;
    }
  };
  for (let attempt = 1; attempt <= CLAIM_ATTEMPTS; attempt += 1) {
    const claim = await claimIdempotencyKeyFor(sql, { accountId, key, hash, importId: randomUUID() });
    const { importId } = claim;
    if (claim.type === 'claimed') return { importId, result: await releasingOnFailure(importId, () => runner.run(data, importId)), replayed: false };
    // An earlier request holds the key: its recorded result, or its job's, is what we answer.
    // note: that request's job may be writing right now, so an error here (the database or Redis
    // away) leaves the import's outcome unknown: never the 503 that says nothing was written.
    // Only an ended import is an outcome: any other job is rejoined as one not recorded.
    const earlier = await asOutcomeUnknown(data.requestId, importId, async () => {
      const recorded = await findImportRecord(sql, importId, { withRows: data.returnRows === true });
      if (recorded?.state === 'completed' || recorded?.state === 'failed') return recorded;
      return { state: 'rejoined' as const, result: await releasingOnFailure(importId, () => runner.rejoin(data, importId)) };
    });
    if (earlier.state === 'failed') {
      // note: that import wrote nothing, as it was answered, but its request did not get to
      // release the key (it died, or lost the database just then): this request releases it and
      // claims it afresh.
      await releaseIdempotencyKey(sql, { accountId, key, importId });
      continue;
    }
    return { importId, result: earlier.result, replayed: true };
  }
  throw new Error(`Idempotency-Key claim changed hands ${CLAIM_ATTEMPTS} times in a row`);
}
