import { collectDefaultMetrics, Registry } from 'prom-client';

/**
 * A Prometheus registry of its own for one API or worker, with the default process metrics
 * (CPU, memory, event loop lag, GC, handles). note: never prom-client's global registry, so a
 * test process can build several apps and workers without their metrics colliding.
 */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}
