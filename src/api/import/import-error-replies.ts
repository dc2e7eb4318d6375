import type { ApiError } from '../../shared/errors/api-error.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import { IdempotencyKeyReusedError, ImportNotWrittenError, ImportOutcomeUnknownError } from './import-errors.js';

const NOT_WRITTEN = {
  'workers-unavailable': apiErrors.workersUnavailable,
  failed: apiErrors.importFailed,
  lost: apiErrors.importFailed,
  'not-enqueued': apiErrors.serviceUnavailable,
} as const;

/** The HTTP answer to an import's domain error (import-errors.ts), or undefined for any other error. */
export function importErrorReply(error: unknown): ApiError | undefined {
  if (error instanceof ImportNotWrittenError) return NOT_WRITTEN[error.reason]();
  if (error instanceof ImportOutcomeUnknownError) return apiErrors.stillRunning(error.requestId);
  if (error instanceof IdempotencyKeyReusedError) return apiErrors.idempotencyKeyReused();
  return undefined;
}
