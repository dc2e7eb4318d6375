import type { FastifyRequest } from 'fastify';

/** Fastify resolves request.ip from the socket, or from X-Forwarded-For only under TRUST_PROXY. */
export function clientIp(request: FastifyRequest): string {
  return request.ip || 'unknown';
}
