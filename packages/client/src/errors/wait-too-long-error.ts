/**
 * The server asked to wait (`Retry-After` of a 429 or 503) longer than the client allows
 * (`maxWaitMs`), or longer than is left before a watch's deadline. Nothing of the request was
 * written (a 429 or 503 writes nothing); `waitMs` is what it asked for: come back then.
 */
export class WaitTooLongError extends Error {
  override readonly name = 'WaitTooLongError';

  constructor(
    readonly status: number,
    readonly waitMs: number,
    readonly allowedMs: number,
  ) {
    super(`the server answered ${status} and asks to wait ${(waitMs / 1000).toFixed(1)} s, more than the ${(allowedMs / 1000).toFixed(1)} s allowed`);
  }
}
