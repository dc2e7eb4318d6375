import { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { redactedUrl, type Logger } from '../../shared/infra/logger.js';
import { echoedText } from '../../shared/errors/echoed-text.js';
import { IMPORTS_PATH } from '../../shared/import-location.js';
import { clientIp } from '../client-ip.js';
import { BOARD_PATH } from './admin-paths.js';

/**
 * Fastify's own request lines turned off ("incoming request", "request completed", "Route ...
 * not found"): registerRequestLog writes the one line per request instead. note: the framework's
 * other lines (a serializer that failed, a stream that broke after its headers) are kept.
 */
export class RequestLogController extends LogController {
  override incomingRequest(): void {}
  override requestCompleted(): void {}
  override routeNotFound(): void {}
}

/** Codes whose line is a warning: someone failing to authenticate, or refused for it (docs/operators.md#logs). */
const WARN_CODES: ReadonlySet<string> = new Set([
  'missing_api_key',
  'invalid_api_key',
  'api_key_expired',
  'missing_session_token',
  'invalid_session_token',
  'admin_auth_required',
  'missing_scope',
  'origin_not_allowed',
  'ip_not_allowed',
  'locked_out',
]);

/** Routes that probes and scrapers call every few seconds, and the board's page assets. */
const PROBE_ROUTES: ReadonlySet<string> = new Set(['/v1/health', '/metrics']);
const isProbe = (route: string | undefined) => route !== undefined && (PROBE_ROUTES.has(route) || route.startsWith(BOARD_PATH));

type Level = 'debug' | 'info' | 'warn' | 'error';

/**
 * The line's level follows the outcome: a 5xx is an error; a refused or failed authentication a
 * warning; any other 4xx (the partner's request, a limit doing its job) and every success info.
 * A probe's answer is debug unless it is an error or a refusal, so probes do not flood the log;
 * a degraded health check (503) is debug too: whoever hit the dependency logged why.
 */
export function completionLevel(statusCode: number, code: string | undefined, route: string | undefined): Level {
  if (isProbe(route) && (statusCode < 400 || (route === '/v1/health' && statusCode === 503))) return 'debug';
  if (statusCode >= 500) return 'error';
  if (code !== undefined && WARN_CODES.has(code)) return 'warn';
  return 'info';
}

/** What a request's completion line adds of its own: the error code, the cause of a 5xx, a framework error's code. */
const noted = new WeakMap<FastifyRequest, Record<string, unknown>>();

/**
 * Adds `fields` to the request's completion line. note: the error handler hands the error of a
 * 500 here rather than logging it on a line of its own, so a failure is one line, at error,
 * with its cause.
 */
export function noteForRequestLog(request: FastifyRequest, fields: Record<string, unknown>): void {
  noted.set(request, { ...noted.get(request), ...fields });
}

const IMPORT_LOCATION = `${IMPORTS_PATH}/`;
const IMPORT_ROUTE = `${IMPORTS_PATH}/:id`;

/**
 * The import the reply names (its `Location`), or the one the route reads or cancels. note: the
 * route's id is the partner's, decoded (`%E2%80%AE`, `%00`): echoed, as an error text would.
 */
function importIdOf(request: FastifyRequest, reply: FastifyReply, route: string | undefined): string | undefined {
  const location = reply.getHeader('location');
  if (typeof location === 'string' && location.startsWith(IMPORT_LOCATION)) return decodeURIComponent(location.slice(IMPORT_LOCATION.length));
  const id = route?.startsWith(IMPORT_ROUTE) === true ? (request.params as { id?: string } | undefined)?.id : undefined;
  return id === undefined ? undefined : echoedText(id);
}

/** `?dry_run=true` on a bulk route, as the route read it. */
const isDryRun = (request: FastifyRequest) => (request.query as { dry_run?: unknown } | undefined)?.dry_run === 'true';

/**
 * One line per request, when its answer has gone (docs/operators.md#logs): `request completed`
 * with the method, the path (query redacted), the route, the status, the time taken, the client
 * address, the error `code` of an error, the account and key prefix once known (never the key),
 * the import the answer names, and `dryRun` for a dry run. The request id is on it as on every
 * line of the request.
 */
export function registerRequestLog(app: FastifyInstance): void {
  // note: the code is read from the body before it is serialized: every error body the service
  // sends is an object of the catalogue (api-errors.ts) passing through here.
  app.addHook('preSerialization', (request, reply, payload, done) => {
    if (reply.statusCode >= 400) {
      const code = (payload as { code?: unknown } | null)?.code;
      if (typeof code === 'string') noteForRequestLog(request, { code });
    }
    done(null, payload);
  });
  app.addHook('onResponse', (request, reply, done) => {
    writeRequestLine(request, reply);
    done();
  });
}

/** Writes a request's completion line; also for requests answered outside the hooks (framework-errors.ts). */
export function writeRequestLine(request: FastifyRequest, reply: FastifyReply): void {
  // note: one line each, however the answer went. A flag on the request rather than a WeakSet of
  // them: an entry per request in a WeakSet was measurable on GET /v1/api/me, and weighs on
  // every young-generation GC while the request lives.
  if (request.completionLineWritten === true) return;
  request.completionLineWritten = true;
  const route = request.is404 ? undefined : request.routeOptions.url;
  const extra = noted.get(request) ?? {};
  const outcome = completionLevel(reply.statusCode, typeof extra['code'] === 'string' ? extra['code'] : undefined, route);
  // note: a 503 of a process that is stopping is the stop doing its job (graceful-close.ts): info
  const level = extra['shuttingDown'] === true && outcome === 'error' ? 'info' : outcome;
  // note: the request's logger is a pino child (app.ts hands Fastify the service's pino logger).
  if (!(request.log as unknown as Logger).isLevelEnabled(level)) return;
  const key = request.apiKey;
  const importId = importIdOf(request, reply, route);
  request.log[level](
    {
      method: request.method,
      url: redactedUrl(request.url),
      ...(route === undefined ? {} : { route }),
      statusCode: reply.statusCode,
      responseTime: Math.round(reply.elapsedTime * 10) / 10,
      remoteAddress: clientIp(request),
      ...extra,
      ...(key !== undefined
        ? { accountId: key.account.id, keyPrefix: key.keyPrefix }
        : request.sessionAccount !== undefined
          ? { accountId: request.sessionAccount.id }
          : {}),
      ...(importId === undefined ? {} : { importId }),
      ...(isDryRun(request) ? { dryRun: true } : {}),
    },
    'request completed',
  );
}
