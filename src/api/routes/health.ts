import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { HealthResponseSchema } from '../../shared/api-schemas/health.js';
import { RetryLaterErrorSchema } from '../../shared/api-schemas/error-body.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import type { ApiDeps } from '../deps.js';
import { ERROR_EXAMPLES, HEALTH_EXAMPLES, example } from '../openapi/examples.js';
import { errorResponse, internalErrorResponse } from '../openapi/responses.js';
import { jsonResponse } from '../openapi/route-schema.js';
import { SERVICE_VERSION } from '../version.js';

const CHECK_TIMEOUT_MS = 1_500;

async function check(probe: () => Promise<unknown>): Promise<'ok' | 'down'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'down'>((resolve) => {
    timer = setTimeout(() => resolve('down'), CHECK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([probe().then(() => 'ok' as const, () => 'down' as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const schema = {
  operationId: 'getHealth',
  summary: 'Liveness of the API and its dependencies',
  description: 'No key needed; never rate limited or locked out.',
  tags: ['Health'],
  security: [],
  response: {
    200: jsonResponse(HealthResponseSchema, { description: 'Up: PostgreSQL and Redis answer.', headers: ['X-Request-Id'], examples: { ok: HEALTH_EXAMPLES.ok } }),
    403: errorResponse('A browser sent an Origin that is not allowed.', { origin: ERROR_EXAMPLES.origin }),
    500: internalErrorResponse(),
    503: jsonResponse(z.union([HealthResponseSchema, RetryLaterErrorSchema]), {
      description:
        'Degraded: the failing check is `down`. Or the process is shutting down (a load balancer should stop sending it requests): the error `service_unavailable`, with `Retry-After`.',
      headers: ['X-Request-Id'],
      sometimes: ['Retry-After'],
      examples: { degraded: HEALTH_EXAMPLES.degraded, shuttingDown: example('Shutting down', apiErrors.serviceUnavailable().body) },
    }),
  },
};

/**
 * `GET /v1/health` (docs/endpoints.md#health): no key, no limits; 503 naming the failing check.
 * note: Redis is probed with a read of one of the service's keys rather than PING, which a
 * cluster client would send to any node instead of the master holding the service's slot.
 */
export async function healthRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const startedAt = Date.now();
  app.get('/v1/health', { schema }, async (_request, reply) => {
    const [postgres, redis] = await Promise.all([check(() => deps.sql`select 1`), check(() => deps.authVersion.current())]);
    const healthy = postgres === 'ok' && redis === 'ok';
    return reply.code(healthy ? 200 : 503).send({
      status: healthy ? 'ok' : 'degraded',
      version: SERVICE_VERSION,
      uptime_sec: Math.floor((Date.now() - startedAt) / 1000),
      checks: { postgres, redis },
      timestamp: new Date().toISOString(),
    });
  });
}
