/**
 * No answer came, after the retries the call allows. `outcome` says what became of the request:
 * `not-delivered` when no attempt reached the server (no connection was ever made, and no earlier
 * attempt was answered 500, 502 or 504), so nothing can have been written: sending it again is
 * safe even without an Idempotency-Key; `unknown` when the server may have read it (a timeout, a
 * dropped connection, an earlier 5xx): send it again only with the same Idempotency-Key.
 */
export class NetworkError extends Error {
  override readonly name = 'NetworkError';
  readonly outcome: 'not-delivered' | 'unknown';

  constructor(message: string, delivered: boolean, readonly attempts: number) {
    super(message);
    this.outcome = delivered ? 'unknown' : 'not-delivered';
  }
}
