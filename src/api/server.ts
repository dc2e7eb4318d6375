import type { FastifyInstance } from 'fastify';
import type { Config } from '../shared/infra/config.js';
import type { Logger } from '../shared/infra/logger.js';
import type { ApiMetrics } from './api-metrics.js';
import { buildApp } from './app.js';
import { createApiDeps } from './deps.js';

export interface RunningApi {
  app: FastifyInstance;
  /** what `GET /metrics` serves; `npm start` adds its in-process worker's (src/start.ts) */
  metrics: ApiMetrics;
  /** stops accepting, lets in-flight requests (and the imports they await) finish, closes clients */
  close(): Promise<void>;
}

export async function startApiServer(config: Config, log: Logger): Promise<RunningApi> {
  const deps = await createApiDeps(config, log);
  const app = await buildApp(deps);
  await app.listen({ port: config.port, host: config.host });
  return {
    app,
    metrics: deps.metrics,
    async close() {
      await app.close();
      await deps.close();
    },
  };
}
