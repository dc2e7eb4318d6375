import type { ApiError } from '../../shared/errors/api-error.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import type { ImportRefusal } from './import-refusal.js';
import { IdempotencyKeyReusedError, ImportNotWrittenError, ImportOutcomeUnknownError } from './import-errors.js';

/**
 * The one place where an import's refusals and domain errors become HTTP answers; their statuses
 * and texts are the error catalogue's (api-errors.ts).
 */

// note: a job that never reached Redis is answered as any unavailable dependency, without its id.
const NOT_WRITTEN: Record<ImportNotWrittenError['reason'], (importId?: string) => ApiError> = {
  'workers-unavailable': apiErrors.workersUnavailable,
  failed: apiErrors.importFailed,
  lost: apiErrors.importFailed,
  'not-enqueued': () => apiErrors.serviceUnavailable(),
};

/** The HTTP answer to an import's domain error (import-errors.ts), or undefined for any other error. */
export function importErrorReply(error: unknown): ApiError | undefined {
  if (error instanceof ImportNotWrittenError) return NOT_WRITTEN[error.reason](error.importId);
  if (error instanceof ImportOutcomeUnknownError) return apiErrors.stillRunning(error.requestId, error.importId);
  if (error instanceof IdempotencyKeyReusedError) return apiErrors.idempotencyKeyReused();
  return undefined;
}

/** The 400 that answers a bulk body refused as a whole. */
export function importRefusalError(refusal: ImportRefusal): ApiError {
  switch (refusal.refused) {
    case 'invalid-json':
      return apiErrors.invalidJson();
    case 'no-envelope':
      return apiErrors.bulkEnvelope(refusal.kind);
    case 'no-rows':
      return apiErrors.noRows(refusal.kind, refusal.maxRows);
    case 'too-many-rows':
      return apiErrors.tooManyRows(refusal.kind, refusal.maxRows, refusal.received);
    case 'no-valid-rows':
      return apiErrors.noValidRows(refusal.errors);
  }
}
