import closeWithGrace from 'close-with-grace';
import { startApiServer } from './api/server.js';
import { loadConfig } from './shared/infra/config.js';
import { createLogger, warnAboutDevSecrets } from './shared/infra/logger.js';
import { includeMetrics } from './shared/infra/metrics-registry.js';
import { prepareDatabase } from './shared/infra/prepare-database.js';
import { startWorker } from './worker/worker.js';

/**
 * `npm start`: the one-command local run. Migrates, then runs the API and one worker in this
 * process. Production runs them as separate processes (`start:api`, `start:worker`).
 *
 * The API's `GET /metrics` serves the worker's metrics too (slots, job durations, rows written):
 * one process, one scrape target, and the shipped alert rules find every metric they read
 * without METRICS_PORT.
 */
const config = loadConfig();
const log = createLogger(config, 'bulk-import');
warnAboutDevSecrets(config, log);
await prepareDatabase(config, log);
const worker = await startWorker(config, log.child({ part: 'worker' }));
const api = await startApiServer(config, log);
includeMetrics(api.metrics.registry, worker.metrics.registry);

closeWithGrace({ delay: config.importTimeoutMs + 5_000 }, async ({ signal, err }) => {
  if (err) log.error({ err }, 'stopping after an error');
  else log.info({ signal }, 'stopping');
  // note: the API first, so requests awaiting imports finish while the worker still runs.
  await api.close();
  await worker.close();
});
