import type { KnownErrorCode } from '../generated/known-codes.js';

/**
 * The API answered, but not with what the call expects: a 4xx (the request was refused and
 * nothing of it written), a redirect (never followed: `headers.get('location')` says where), or a
 * 5xx left after the retries. `code` is the body's `code` when it has one. note: codes are open:
 * the API may add new ones, so a switch on `code` needs a default that goes by `status`.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  /** a code the document lists (KNOWN_ERROR_CODES), or one newer than this package: `(string & {})` keeps the known ones visible */
  readonly code: KnownErrorCode | (string & {}) | undefined;

  constructor(
    readonly status: number,
    /** the body as sent: JSON parsed, or its text; undefined when it was too large to read */
    readonly body: unknown,
    readonly headers: Headers,
    what: string,
  ) {
    const error = typeof body === 'object' && body !== null ? (body as { error?: unknown; code?: unknown }) : {};
    super(`${what}: ${status}${typeof error.error === 'string' ? ` ${error.error.slice(0, 500)}` : ''}`);
    this.code = typeof error.code === 'string' ? error.code : undefined;
  }

  /** `X-Request-Id` of the answer, to quote to support. */
  get requestId(): string | undefined {
    return this.headers.get('x-request-id') ?? undefined;
  }
}
