// note: the client package's, which the CLI sends through: one reading of Retry-After and of the
// rate-limit headers for both.
export { RateLimitPacer, retryAfterMs } from '@bulk-import/client';
