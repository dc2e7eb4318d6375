import { randomUUID } from 'node:crypto';
import { IDEMPOTENCY_KEY_PATTERN } from '../../shared/api-schemas/headers.js';
import type { BulkResult } from '../../shared/import-job/job-data.js';
import type { NewImport } from '../../shared/import-job/queue.js';
import { claimIdempotencyKey, releaseIdempotencyKey } from '../../shared/repositories/idempotency-keys.js';
import { findImportResult } from '../../shared/repositories/imports.js';
import type { Sql } from '../../shared/infra/db.js';
import { IdempotencyKeyReusedError, ImportNotWrittenError } from './import-errors.js';
import type { ImportRunner } from './import-runner.js';
import { apiErrors } from '../../shared/errors/api-errors.js';

/** The optional `Idempotency-Key` header: 1-255 printable ASCII characters. */
export function parseIdempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (typeof header !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(header)) {
    throw apiErrors.idempotencyKeyMalformed();
  }
  return header;
}

/**
 * Runs an import under an Idempotency-Key: the first request claims the key and runs; a repeat
 * with the same body replays the recorded result, or waits for the first run when it is still
 * going, and never inserts again; a repeat with another body is refused (422).
 */
export async function runIdempotentImport(
  sql: Sql,
  runner: ImportRunner,
  data: NewImport,
  key: string,
  hash: Buffer,
): Promise<{ result: BulkResult; replayed: boolean }> {
  const claim = await claimIdempotencyKey(sql, { accountId: data.accountId, key, requestHash: hash, jobId: randomUUID() });
  // note: when nothing was written for certain, the claim is released so that a retry with the
  // same key runs afresh instead of replaying a failure. Any other error keeps it: a job whose
  // add timed out (a Redis failover) may still run, and a retry must rejoin that job, under
  // its id, rather than start a second one that would write the rows again.
  const releasingOnFailure = async (run: () => Promise<BulkResult>): Promise<BulkResult> => {
    try {
      return await run();
    } catch (error) {
      if (error instanceof ImportNotWrittenError) {
        await releaseIdempotencyKey(sql, { accountId: data.accountId, key, jobId: claim.jobId });
      }
      throw error;
    }
  };
  if (claim.claimed) return { result: await releasingOnFailure(() => runner.run(data, claim.jobId)), replayed: false };
  if (!claim.requestHash.equals(hash)) {
    throw new IdempotencyKeyReusedError();
  }
  // An earlier request holds the key: its recorded result, or its job's, is what we answer.
  const recorded = await findImportResult(sql, claim.jobId);
  if (recorded) return { result: recorded, replayed: true };
  return { result: await releasingOnFailure(() => runner.rejoin(data, claim.jobId)), replayed: true };
}
