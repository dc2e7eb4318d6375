/**
 * What every error body holds: the text for a person and the code for a program
 * (docs/errors.md#shape). note: `Code` is the catalogue's set (api-errors.ts, which builds every
 * ApiError); a parameter rather than an import, so that the catalogue and this type do not need
 * each other.
 */
export type ApiErrorBody<Code extends string = string> = { error: string; code: Code } & Record<string, unknown>;

/**
 * The one error type handlers throw. `body` is exactly what the client receives; `headers`
 * carries e.g. Retry-After. Built only by the factories of the catalogue (api-errors.ts).
 */
export class ApiError<Code extends string = string> extends Error {
  override name = 'ApiError';

  constructor(
    readonly statusCode: number,
    readonly body: ApiErrorBody<Code>,
    readonly headers: Record<string, string> = {},
  ) {
    super(body.error);
  }
}

export function retryAfterHeaders(retryAfterSec: number): Record<string, string> {
  return { 'retry-after': String(retryAfterSec) };
}
