/**
 * What every error body holds: the text for a person and the code for a program
 * (docs/errors.md#shape). note: `code` is one of the catalogue's (api-errors.ts, which builds every
 * ApiError and whose tests pin the set); typed as a string here so that the catalogue and this
 * type do not need each other.
 */
export type ApiErrorBody = { error: string; code: string } & Record<string, unknown>;

/**
 * The one error type handlers throw. `body` is exactly what the client receives; `headers`
 * carries e.g. Retry-After. Built only by the factories of the catalogue (api-errors.ts).
 */
export class ApiError extends Error {
  override name = 'ApiError';

  constructor(
    readonly statusCode: number,
    readonly body: ApiErrorBody,
    readonly headers: Record<string, string> = {},
  ) {
    super(body.error);
  }
}

export function retryAfterHeaders(retryAfterSec: number): Record<string, string> {
  return { 'retry-after': String(retryAfterSec) };
}
