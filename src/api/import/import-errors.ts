/**
 * How an import can end other than with its result. Domain errors: the runner and the
 * idempotency layer throw and test these; only the HTTP error handler turns them into statuses
 * (import-error-replies.ts).
 */

/** Why an import certainly wrote nothing. */
export type NotWrittenReason =
  /** no worker took the job within IMPORT_PICKUP_TIMEOUT_MS, and it was withdrawn */
  | 'workers-unavailable'
  /** the job failed: its transaction rolled back */
  | 'failed'
  /** the job never reached Redis (the connection was already down) */
  | 'not-enqueued';

/**
 * The import is certain never to write anything, so a retry is safe. note: an error adding the
 * job is not one of these, since a command that timed out may still have reached Redis and the
 * job may run.
 */
export class ImportNotWrittenError extends Error {
  override name = 'ImportNotWrittenError';

  constructor(readonly reason: NotWrittenReason) {
    super(`import not written: ${reason}`);
  }
}

/**
 * The one unknown outcome: the import may have been written or may still be. The partner finds
 * out by retrying with the same Idempotency-Key, or by checking what was created.
 */
export class ImportOutcomeUnknownError extends Error {
  override name = 'ImportOutcomeUnknownError';

  constructor(readonly requestId: string) {
    super('import outcome unknown');
  }
}

/** The Idempotency-Key was used before with another body (or on the other bulk endpoint). */
export class IdempotencyKeyReusedError extends Error {
  override name = 'IdempotencyKeyReusedError';
}
