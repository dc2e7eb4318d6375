/**
 * Recognises errors that mean PostgreSQL or Redis is unreachable or going away, as opposed to a
 * bug: the request gets a retryable 503 instead of a 500.
 */

const CONNECTION_ERROR_CODES = new Set([
  // postgres.js
  'CONNECT_TIMEOUT', 'CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'CONNECTION_ENDED',
  // Node sockets
  'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND',
  // PostgreSQL: admin/crash shutdown, cannot connect now, too many connections
  '57P01', '57P02', '57P03', '53300',
  // PostgreSQL: a write reached a standby (during a failover, before the pool found the new primary)
  '25006',
]);

const REDIS_UNAVAILABLE_MESSAGES = [
  'Connection is closed',
  "Stream isn't writeable",
  'Reached the max retries per request limit',
  'Command timed out',
];

export function isDependencyUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message, name } = error as { code?: unknown; message?: unknown; name?: unknown };
  if (typeof code === 'string' && (CONNECTION_ERROR_CODES.has(code) || code.startsWith('08'))) return true;
  if (name === 'MaxRetriesPerRequestError') return true;
  return typeof message === 'string' && REDIS_UNAVAILABLE_MESSAGES.some((m) => message.includes(m));
}
