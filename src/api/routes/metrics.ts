import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../deps.js';

/** `GET /metrics`: the API's Prometheus metrics (mounted behind the admin basic auth). */
export async function metricsRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const { registry } = deps.metrics;
  app.get('/metrics', async (_request, reply) => reply.type(registry.contentType).send(await registry.metrics()));
}
