import underPressure from '@fastify/under-pressure';
import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import type { Config } from '../../shared/infra/config.js';
import { apiErrors } from '../../shared/errors/api-errors.js';

const MB = 1024 * 1024;

/**
 * Samples this process's load every second with @fastify/under-pressure: the mean event-loop
 * delay, the V8 heap in use and the resident memory, against OVERLOAD_EVENT_LOOP_DELAY_MS,
 * OVERLOAD_HEAP_USED_MB and OVERLOAD_RSS_MB. note: the resident memory is what the container's
 * limit counts; request bodies are Buffers, outside the V8 heap, and each preparing thread has a
 * heap of its own.
 *
 * The plugin's own hook runs on every request, before the lockout and the key; it lets every
 * request through. The bulk routes decide with shedWhenOverloaded, in their place among the
 * checks.
 */
export async function registerLoadShedding(
  app: FastifyInstance,
  config: Pick<Config, 'overloadEventLoopDelayMs' | 'overloadHeapUsedMb' | 'overloadRssMb'>,
): Promise<void> {
  await app.register(underPressure, {
    maxEventLoopDelay: config.overloadEventLoopDelayMs,
    maxHeapUsedBytes: config.overloadHeapUsedMb * MB,
    maxRssBytes: config.overloadRssMb * MB,
    sampleInterval: 1_000,
    pressureHandler: () => undefined,
  });
}

/**
 * Load shedding (docs/access.md#load-shedding), a hook of the bulk routes placed after the
 * in-flight cap: while the process is overloaded, a new bulk import gets 503 before its body is
 * read. note: after the lockout, the key, the quota, the scope and the cap, so a shed request is
 * counted against the rate limits and an overloaded process answers every other refusal as a
 * healthy one does; the slot it took is given back when its reply closes, the handler never
 * having started. A backstop: the cap keeps one partner's burst from getting here at all.
 */
export function shedWhenOverloaded(app: FastifyInstance): onRequestHookHandler {
  return function shedWhenOverloaded(request, _reply, done) {
    if (!app.isUnderPressure()) {
      done();
      return;
    }
    const { eventLoopDelay, heapUsed, rssBytes } = app.memoryUsage();
    request.log.info({ eventLoopDelayMs: Math.round(eventLoopDelay), heapUsedMb: Math.round(heapUsed / MB), rssMb: Math.round(rssBytes / MB) }, 'bulk import shed: the process is overloaded');
    done(apiErrors.overloaded());
  };
}
