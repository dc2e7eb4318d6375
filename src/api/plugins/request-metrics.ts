import type { FastifyInstance } from 'fastify';
import type { ApiMetrics } from '../api-metrics.js';
import { BULK_KIND_NAMES, type BulkKind } from '../../shared/bulk-kinds.js';

const BULK_ROUTES = new Map<string, BulkKind>(BULK_KIND_NAMES.map((kind) => [`/v1/api/${kind}/bulk`, kind]));

function isBulkResult(payload: unknown): payload is { inserted: number; skipped: number } {
  const p = payload as { inserted?: unknown; skipped?: unknown } | null;
  return typeof p === 'object' && p !== null && typeof p.inserted === 'number' && typeof p.skipped === 'number';
}

/**
 * Request durations for every response, and the rows of every 201 a bulk route sends.
 * note: the route label is the route's pattern, never the raw URL, so the number of series stays
 * bounded whatever clients send; requests no route matched share "unmatched".
 */
export function registerRequestMetrics(app: FastifyInstance, metrics: ApiMetrics): void {
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.is404 ? 'unmatched' : (request.routeOptions.url ?? 'unmatched');
    metrics.httpDuration.observe({ method: request.method, route, status: String(reply.statusCode) }, reply.elapsedTime / 1000);
    done();
  });
  // note: counted from the reply object before it is serialised; a replay (Idempotent-Replayed)
  // wrote nothing, so it is not counted again.
  app.addHook('preSerialization', (request, reply, payload, done) => {
    const kind = BULK_ROUTES.get(request.routeOptions.url ?? '');
    if (kind !== undefined && reply.statusCode === 201 && reply.getHeader('idempotent-replayed') !== 'true' && isBulkResult(payload)) {
      metrics.recordRows(kind, payload.inserted, payload.skipped);
    }
    done(null, payload);
  });
}
