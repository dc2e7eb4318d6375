import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import './fastify-types.js';
import type { Config } from '../shared/infra/config.js';
import type { ApiDeps } from './deps.js';
import { registerApiDocs } from './plugins/api-docs.js';
import { registerCors } from './plugins/cors.js';
import { registerErrorHandling } from './plugins/error-handler.js';
import { registerExpectContinue } from './plugins/expect-continue.js';
import { registerBodyDeadline, serverRequestTimeoutMs } from './plugins/body-deadline.js';
import { clientErrorHandler, frameworkErrors } from './plugins/framework-errors.js';
import { registerGracefulClose } from './plugins/graceful-close.js';
import { registerJsonBodyParser } from './plugins/json-body.js';
import { registerLoadShedding } from './plugins/load-shedding.js';
import { registerLockoutGuard } from './plugins/lockout-guard.js';
import { registerMethodNotAllowed } from './plugins/method-not-allowed.js';
import { registerOperatorEndpoints } from './routes/operator-endpoints.js';
import { registerRequestMetrics } from './plugins/request-metrics.js';
import { registerRequestLog, RequestLogController } from './plugins/request-log.js';
import { requestLoggerFactory } from './plugins/request-logger.js';
import { requestIdFrom } from './plugins/request-id.js';
import { bulkImportRoutes } from './routes/bulk-imports.js';
import { rowRemovalRoutes } from './routes/row-removals.js';
import { healthRoutes } from './routes/health.js';
import { keyRoutes } from './routes/keys.js';
import { meRoutes } from './routes/me.js';
import { importRoutes } from './routes/imports.js';
import { fileImportRoutes } from './routes/file-imports.js';
import { listingRoutes, machineRoutes } from './routes/catalogue-rows.js';
import { listingExportRoutes, machineExportRoutes } from './routes/catalogue-export.js';
import accepts from '@fastify/accepts';

/** A hop count trusts that many proxies nearest to us, as proxy-addr does for a number. */
function toFastifyTrustProxy(setting: Config['trustProxy']) {
  return typeof setting === 'number' ? (_address: string, hop: number) => hop < setting : setting;
}

/** Builds the API without listening: the server entry listens, tests call `app.inject`. */
export async function buildApp(deps: ApiDeps): Promise<FastifyInstance> {
  // note: typed as the base logger so the app gets Fastify's default instance type.
  const loggerInstance: FastifyBaseLogger = deps.log;
  const app = Fastify({
    loggerInstance,
    trustProxy: toFastifyTrustProxy(deps.config.trustProxy),
    requestIdHeader: false,
    genReqId: requestIdFrom,
    logController: new RequestLogController({ requestIdLogLabel: 'requestId' }),
    childLoggerFactory: requestLoggerFactory,
    // note: per-route limits (1 MB machines, 2 MB listings) are set on those routes.
    bodyLimit: 64 * 1024,
    return503OnClosing: false, // note: graceful-close.ts answers the catalogue's 503 instead
    // note: bounds how long headers and body may take to arrive, not the wait for an import's
    // result (IMPORT_TIMEOUT_MS); Node checks open requests against it every second. It is the
    // longer of REQUEST_TIMEOUT_MS and FILE_UPLOAD_TIMEOUT_MS; the shorter is applied per request
    // (registerBodyDeadline). The headers timeout must not exceed it: Node swaps the two when it
    // does, and a trickling body would then get the headers' 60 s.
    requestTimeout: serverRequestTimeoutMs(deps.config),
    http: { connectionsCheckingInterval: 1_000, headersTimeout: Math.min(60_000, deps.config.requestTimeoutMs) },
    frameworkErrors,
    clientErrorHandler,
  });

  // Every response carries its request id, errors and 404s included.
  // note: the hooks that run on every request take a callback, not a promise: one promise and
  // its microtask per hook per request is measurable on the GET /v1/api/me hot path.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  registerErrorHandling(app);
  registerBodyDeadline(app, deps.config);
  registerGracefulClose(app);
  registerJsonBodyParser(app);
  registerExpectContinue(app);
  await registerCors(app, deps.config.corsAllowedOrigins);
  await registerLoadShedding(app, deps.config);
  registerLockoutGuard(app, deps.lockout, deps.metrics);
  // note: after CORS and the lockout, before every route it collects (docs/endpoints.md#methods).
  registerMethodNotAllowed(app);
  registerRequestMetrics(app, deps.metrics);
  registerRequestLog(app);
  // note: before the routes: @fastify/swagger records each route as it is added.
  await registerApiDocs(app);

  await app.register(healthRoutes, deps);
  await app.register(meRoutes, deps);
  await app.register(accepts);
  await app.register(bulkImportRoutes, deps);
  await app.register(rowRemovalRoutes, deps);
  await app.register(importRoutes, deps);
  await app.register(fileImportRoutes, deps);
  await app.register(listingRoutes, deps);
  await app.register(machineRoutes, deps);
  await app.register(listingExportRoutes, deps);
  await app.register(machineExportRoutes, deps);
  await app.register(keyRoutes, deps);
  await registerOperatorEndpoints(app, deps);
  return app;
}
