import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from './config.js';

/**
 * Paths that could carry a secret. Fastify's default request serializer does not log headers,
 * but anything that logs a request or a body by hand is covered too.
 */
const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'session_token',
  'sessionToken',
  'api_key',
  'apiKey',
  'key_hash',
  'keyHash',
  '*.session_token',
  '*.api_key',
  '*.key_hash',
];

export type { Logger };

interface LoggedRequest {
  method?: string;
  url?: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

/**
 * Fastify's request serializer, without the query string: the API takes no query parameters,
 * and a partner who puts a key there by mistake must not find it in our logs.
 */
function serializeRequest(req: LoggedRequest) {
  const url = req.url ?? '';
  const queryAt = url.indexOf('?');
  return {
    method: req.method,
    url: queryAt === -1 ? url : `${url.slice(0, queryAt)}?[redacted]`,
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

/** `destination` defaults to stdout; tests pass a stream to read what was logged. */
export function createLogger(config: Pick<Config, 'logLevel'>, name: string, destination?: DestinationStream): Logger {
  const options = {
    name,
    level: config.logLevel,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    serializers: { req: serializeRequest },
  };
  return destination === undefined ? pino(options) : pino(options, destination);
}

export function warnAboutDevSecrets(config: Config, log: Logger): void {
  if (config.usingDevSessionSecret) {
    log.warn(
      'SESSION_SECRET is not set: using the built-in development secret. Anyone can mint session tokens. Set SESSION_SECRET before exposing this service.',
    );
  }
}
