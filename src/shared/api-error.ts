/**
 * The one error type handlers throw. `body` is exactly what the client receives, so every error
 * text of the spec lives next to the code that raises it; `headers` carries e.g. Retry-After.
 */
export class ApiError extends Error {
  override name = 'ApiError';

  constructor(
    readonly statusCode: number,
    readonly body: { error: string } & Record<string, unknown>,
    readonly headers: Record<string, string> = {},
  ) {
    super(body.error);
  }
}

export function retryAfterHeaders(retryAfterSec: number): Record<string, string> {
  return { 'retry-after': String(retryAfterSec) };
}

const UNAVAILABLE_RETRY_SEC = 5;

/** PostgreSQL or Redis is away: nothing was done, and the request may be retried shortly. */
export function serviceUnavailable(): ApiError {
  return new ApiError(
    503,
    { error: 'Service temporarily unavailable', retry_after_sec: UNAVAILABLE_RETRY_SEC },
    retryAfterHeaders(UNAVAILABLE_RETRY_SEC),
  );
}
