import { ApiError, retryAfterHeaders, serviceUnavailable } from '../../shared/api-error.js';
import { IdempotencyKeyReusedError, ImportNotWrittenError, ImportOutcomeUnknownError, type NotWrittenReason } from './import-errors.js';

const NOT_WRITTEN: Record<Exclude<NotWrittenReason, 'not-enqueued'>, { error: string; retryAfterSec: number }> = {
  'workers-unavailable': { error: 'Import workers unavailable; nothing was written', retryAfterSec: 30 },
  failed: { error: 'Import failed; nothing was written', retryAfterSec: 5 },
};

/** The HTTP answer to an import's domain error (import-errors.ts), or undefined for any other error. */
export function importErrorReply(error: unknown): ApiError | undefined {
  if (error instanceof ImportNotWrittenError) {
    if (error.reason === 'not-enqueued') return serviceUnavailable();
    const { error: text, retryAfterSec } = NOT_WRITTEN[error.reason];
    return new ApiError(503, { error: text, retry_after_sec: retryAfterSec }, retryAfterHeaders(retryAfterSec));
  }
  if (error instanceof ImportOutcomeUnknownError) {
    return new ApiError(504, { error: 'Import is still running; check before retrying', request_id: error.requestId });
  }
  if (error instanceof IdempotencyKeyReusedError) {
    return new ApiError(422, { error: 'Idempotency-Key was already used with a different request body' });
  }
  return undefined;
}
