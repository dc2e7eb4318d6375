import { randomUUID } from 'node:crypto';
import type { RawRequestDefaultExpression } from 'fastify';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Echoes a sane incoming X-Request-Id so a partner can correlate; otherwise a fresh UUID. */
export function requestIdFrom(raw: RawRequestDefaultExpression): string {
  const incoming = raw.headers['x-request-id'];
  return typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
}
