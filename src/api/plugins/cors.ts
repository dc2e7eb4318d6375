import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';
import { apiErrors } from '../../shared/errors/api-errors.js';

/**
 * The API is for servers (docs/access.md#cors): a request that carries an Origin not on the allow-list is
 * refused, preflights included, before anything else runs (same section). Allowed origins get the
 * usual CORS headers from @fastify/cors.
 */
export async function registerCors(app: FastifyInstance, allowedOrigins: readonly string[]): Promise<void> {
  const allowed = new Set(allowedOrigins);
  app.addHook('onRequest', (request, _reply, done) => {
    const origin = request.headers.origin;
    done(origin !== undefined && !allowed.has(origin) ? apiErrors.originRefused() : undefined);
  });
  if (allowed.size > 0) {
    await app.register(cors, {
      origin: [...allowed],
      methods: ['GET', 'POST', 'PATCH', 'DELETE'],
      allowedHeaders: ['Authorization', 'Content-Type', 'X-Request-Id', 'Idempotency-Key'],
      exposedHeaders: [
        'X-Request-Id', 'Retry-After', 'X-RateLimit-Limit-Minute', 'X-RateLimit-Remaining-Minute',
        'X-RateLimit-Limit-Day', 'X-RateLimit-Remaining-Day', 'RateLimit-Policy', 'RateLimit', 'Idempotent-Replayed',
      ],
    });
  }
}
