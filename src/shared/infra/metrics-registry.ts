import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { SERVICE_VERSION } from './service-version.js';

/**
 * A Prometheus registry of its own for one API or worker, with the default process metrics
 * (CPU, memory, event loop lag, GC, handles) and `bulk_import_build_info`. note: never
 * prom-client's global registry, so a test process can build several apps and workers without
 * their metrics colliding.
 */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // note: an info metric, always 1: its labels say which build answers, so a query can join on
  // it (`* on(instance) group_left(version) bulk_import_build_info`) or count versions in a rollout.
  new Gauge({
    name: 'bulk_import_build_info',
    help: 'Always 1; the labels name the service version (package.json) and the Node.js version this process runs',
    labelNames: ['version', 'node'] as const,
    registers: [registry],
  }).set({ version: SERVICE_VERSION, node: process.versions.node }, 1);
  return registry;
}

/**
 * Serves `from`'s metrics in `into` as well, for two parts that run in one process (`npm start`).
 * note: a metric `into` already has is left out: the default process metrics and the build info
 * describe the same process, so both registries hold the same numbers under the same names.
 */
export function includeMetrics(into: Registry, from: Registry): void {
  for (const { name } of from.getMetricsAsArray()) {
    const metric = from.getSingleMetric(name);
    if (metric !== undefined && into.getSingleMetric(name) === undefined) into.registerMetric(metric);
  }
}
