import type { FastifyInstance } from 'fastify';
import type { ApiMetrics } from '../api-metrics.js';

/**
 * Request durations for every response. note: the route label is the route's pattern, never the
 * raw URL, so the number of series stays bounded whatever clients send; requests no route
 * matched share "unmatched". The rows of bulk imports are counted by their route.
 */
export function registerRequestMetrics(app: FastifyInstance, metrics: Pick<ApiMetrics, 'httpDuration'>): void {
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.is404 ? 'unmatched' : (request.routeOptions.url ?? 'unmatched');
    metrics.httpDuration.observe({ method: request.method, route, status: String(reply.statusCode) }, reply.elapsedTime / 1000);
    done();
  });
}
