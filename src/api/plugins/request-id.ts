import { randomUUID } from 'node:crypto';
import type { RawRequestDefaultExpression } from 'fastify';
import { holdsSecretShape } from '../../shared/errors/secret-shapes.js';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Echoes a sane incoming X-Request-Id so a partner can correlate; otherwise a fresh UUID. note: an
 * id shaped like an API key or a session token is never adopted: it would be on every log line of
 * the request and in its answer.
 */
export function requestIdFrom(raw: RawRequestDefaultExpression): string {
  const incoming = raw.headers['x-request-id'];
  return typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming) && !holdsSecretShape(incoming) ? incoming : randomUUID();
}
