import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { AnyNewImport } from '../../shared/import/import-queue.js';
import type { AnyImportResult } from '../../shared/import/row-removal-job.js';
import type { Sql } from '../../shared/infra/db.js';
import { runIdempotentImport } from './idempotency.js';
import { ImportOutcomeUnknownError } from './import-errors.js';
import type { ImportRunner } from './import-runner.js';

/** What a request's import came to: its id, its result, and whether it replays an earlier request's. */
export interface ImportRequestOutcome {
  importId: string;
  result: AnyImportResult;
  replayed: boolean;
}

/**
 * Runs an import a request asked for (bulk rows, an archive, a delete) through the queue and a
 * worker, under its Idempotency-Key when it has one: its result, or the earlier request's it
 * replays. Throws what the runner throws.
 */
export async function runImportOf(
  deps: { sql: Sql; importRunner: ImportRunner },
  newImport: AnyNewImport,
  idempotency: { key: string; hash: Buffer } | undefined,
): Promise<ImportRequestOutcome> {
  if (idempotency) return runIdempotentImport(deps.sql, deps.importRunner, newImport, idempotency.key, idempotency.hash);
  const importId = randomUUID();
  return { importId, result: await deps.importRunner.run(newImport, importId), replayed: false };
}

/**
 * Answers a request that holds an in-flight slot (holdInFlightSlot): the slot is released when
 * the answer is decided, except for an import answered 504, which may still be writing: its slot
 * is held until its job ends (docs/access.md#in-flight-cap).
 */
export async function holdingInFlightSlot<T>(request: FastifyRequest, answer: () => Promise<T>): Promise<T> {
  const slot = request.inFlightSlot;
  if (slot) slot.handlerStarted = true;
  let importRunsOn: Promise<void> | undefined;
  try {
    return await answer();
  } catch (error) {
    if (error instanceof ImportOutcomeUnknownError) {
      importRunsOn = error.settled;
      if (error.cause !== undefined) request.log.warn({ err: error.cause }, 'import outcome unknown: an earlier request with its Idempotency-Key may be writing it');
    }
    throw error;
  } finally {
    if (importRunsOn === undefined) slot?.release();
    else void importRunsOn.then(() => slot?.release());
  }
}
