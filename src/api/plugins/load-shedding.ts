import underPressure from '@fastify/under-pressure';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../../shared/infra/config.js';
import { apiErrors } from '../../shared/errors/api-errors.js';

/** Only new bulk imports are shed: they are what loads the process; health and the rest still answer. */
function isBulkImport(request: FastifyRequest): boolean {
  return request.method === 'POST' && request.routeOptions.config.sheddable === true;
}

/**
 * Load shedding (docs/access.md#load-shedding): while this process's event loop lags or its heap is above the
 * limits (OVERLOAD_EVENT_LOOP_DELAY_MS, OVERLOAD_HEAP_USED_MB, sampled every second by
 * @fastify/under-pressure), new bulk imports get 503 before anything else is done for them,
 * the body included. note: a backstop; the per-account in-flight cap keeps one partner's burst
 * from getting here in the first place.
 */
export async function registerLoadShedding(app: FastifyInstance, config: Pick<Config, 'overloadEventLoopDelayMs' | 'overloadHeapUsedMb'>): Promise<void> {
  await app.register(underPressure, {
    maxEventLoopDelay: config.overloadEventLoopDelayMs,
    maxHeapUsedBytes: config.overloadHeapUsedMb * 1024 * 1024,
    sampleInterval: 1_000,
    // note: a rejected promise reaches the error handler, which answers in the service's shape.
    pressureHandler: (request: FastifyRequest) => (isBulkImport(request) ? Promise.reject(apiErrors.overloaded()) : undefined),
  });
}
