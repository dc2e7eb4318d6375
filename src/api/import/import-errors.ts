/**
 * How an import can end other than with its result. Domain errors: the runner and the
 * idempotency layer throw and test these; only the HTTP error handler turns them into statuses
 * (import-error-replies.ts).
 */

/** Why an import wrote nothing. */
export type NotWrittenReason =
  /** no worker took the job within IMPORT_PICKUP_TIMEOUT_MS, and it was withdrawn */
  | 'workers-unavailable'
  /** the job failed */
  | 'failed'
  /** the job is gone from the queue (a Redis that lost its data) */
  | 'lost'
  /** the job never reached Redis (the connection was already down) */
  | 'not-enqueued';

/**
 * The import is certain never to write anything, so a retry is safe. note: thrown by the runner
 * only once the import's record says so (recordImportNotWritten), never on the queue's word
 * alone; an error adding the job is not one of these, since a command that timed out may still
 * have reached Redis and the job may run.
 */
export class ImportNotWrittenError extends Error {
  override name = 'ImportNotWrittenError';

  /**
   * @param importId the import's id, which its record (`failed`) keeps: the partner can look it
   * up; none for a dry run, which is never recorded
   */
  constructor(
    readonly reason: NotWrittenReason,
    readonly importId?: string,
  ) {
    super(`import not written: ${reason}`);
  }
}

/**
 * The one unknown outcome: the import may have been written or may still be. The partner finds
 * out by retrying with the same Idempotency-Key, or by checking what was created.
 */
export class ImportOutcomeUnknownError extends Error {
  override name = 'ImportOutcomeUnknownError';

  /**
   * @param importId the import's id, to watch it by (GET /v1/api/imports/{id}); none for a dry run
   * @param settled resolves when the import's job has ended (or is no longer watched): what the
   * request's in-flight slot waits for, since the import may still be writing until then
   */
  constructor(
    readonly requestId: string,
    readonly importId?: string,
    readonly settled: Promise<void> = Promise.resolve(),
    options?: { cause: unknown },
  ) {
    super('import outcome unknown', options);
  }
}

/** The Idempotency-Key was used before with another body (or on the other bulk endpoint). */
export class IdempotencyKeyReusedError extends Error {
  override name = 'IdempotencyKeyReusedError';
}
