/**
 * The one error type handlers throw. `body` is exactly what the client receives; `headers`
 * carries e.g. Retry-After. Built only by the factories of the catalogue (api-errors.ts).
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
