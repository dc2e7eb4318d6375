import type { Sql } from '../../shared/infra/db.js';
import type { BulkResult } from '../../shared/import-job/job-data.js';
import type { NewImport } from '../../shared/import-job/queue.js';
import { runIdempotentImport } from './idempotency.js';
import type { ImportRunner } from './import-runner.js';

/**
 * Runs one prepared import and returns its result; under its Idempotency-Key when it has one,
 * where `replayed` says the result is an earlier request's and nothing was written again.
 * Throws the domain errors of import-errors.ts.
 */
export async function submitImport(
  sql: Sql,
  runner: ImportRunner,
  newImport: NewImport,
  idempotency?: { key: string; hash: Buffer },
): Promise<{ result: BulkResult; replayed: boolean }> {
  if (idempotency === undefined) return { result: await runner.run(newImport), replayed: false };
  return runIdempotentImport(sql, runner, newImport, idempotency.key, idempotency.hash);
}
