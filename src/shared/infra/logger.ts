import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger } from 'pino';
import type { PrettyOptions, prettyFactory } from 'pino-pretty';
import { echoedText } from '../errors/echoed-text.js';
import { withoutSecrets } from '../errors/secret-shapes.js';
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
 * The most characters of a request's path a log line shows. note: above every path the service
 * answers (the longest, an import's cancel with a 100-character id, has 123); Node takes a
 * request line of up to 16 KB.
 */
export const LOGGED_PATH_MAX_LENGTH = 256;

/**
 * A request target as a log line shows it: its path, echoed as partner input is
 * (docs/errors.md#partner-input-in-error-texts) to LOGGED_PATH_MAX_LENGTH, and `?[redacted]` for
 * any query string. note: the query is never logged, even where it holds only `dry_run` or a
 * page's `limit`: a partner who puts a key there by mistake must not find it in our logs. What a
 * line needs of the query (a dry run) it says in a field of its own.
 */
export function redactedUrl(url: string): string {
  const queryAt = url.indexOf('?');
  const path = echoedText(queryAt === -1 ? url : url.slice(0, queryAt), { max: LOGGED_PATH_MAX_LENGTH });
  return queryAt === -1 ? path : `${path}?[redacted]`;
}

/** A request logged as `req`: method, target without its query string (redactedUrl), and the client. */
function serializeRequest(req: LoggedRequest) {
  return {
    method: req.method,
    url: redactedUrl(req.url ?? ''),
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

/**
 * The own properties of an error that a log line keeps, when they are plain values. note: a list
 * of what is kept rather than of what is dropped, because the rest is where secrets travel:
 * ioredis attaches the command to its errors (`command.args`: the password of AUTH or HELLO, the
 * rows of a SET, a job's data), Node's URL errors their `input` (a connection URL with its
 * password), PostgresError its `detail`, `where` and `hint` (which quote the values of a row),
 * and postgres.js in debug mode the query's parameters.
 */
const LOGGED_ERROR_FIELDS = [
  'code',
  'errno',
  'syscall',
  'address',
  'port',
  'statusCode',
  'severity',
  'schema_name',
  'table_name',
  'column_name',
  'constraint_name',
] as const;
/** Errors an error holds (ClusterAllFailedError's last node error, an EXECABORT's earlier errors), logged by the same rules. */
const NESTED_ERROR_FIELDS = ['cause', 'lastNodeError'] as const;
const NESTED_ERROR_LISTS = ['errors', 'previousErrors'] as const;
const MAX_NESTING = 3;
/**
 * Redis quotes the first arguments of a command it does not know in its error ("ERR unknown
 * command 'x', with args beginning with: 'a' 'b'"), and an error's stack repeats its message.
 */
const QUOTED_ARGUMENTS = /, with args beginning with: .*/g;

function withoutQuotedArguments(text: string): string {
  return text.replace(QUOTED_ARGUMENTS, ', with args beginning with: [redacted]');
}

type ErrorLike = Error | { message: string };

function isErrorLike(value: unknown): value is ErrorLike {
  return value instanceof Error || (typeof value === 'object' && value !== null && typeof (value as { message?: unknown }).message === 'string');
}

function serializeErrorLike(error: ErrorLike, depth: number): Record<string, unknown> {
  const source = error as unknown as Record<string, unknown>;
  const type = error.constructor?.name ?? 'Error';
  const name = typeof source.name === 'string' ? source.name : undefined;
  const out: Record<string, unknown> = {
    type,
    ...(name !== undefined && name !== type ? { name } : {}),
    message: withoutQuotedArguments(String(error.message)),
  };
  if (typeof source.stack === 'string') out.stack = withoutQuotedArguments(source.stack);
  for (const field of LOGGED_ERROR_FIELDS) {
    const value = source[field];
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') out[field] = value;
  }
  if (depth < MAX_NESTING) {
    for (const field of NESTED_ERROR_FIELDS) {
      if (isErrorLike(source[field])) out[field] = serializeErrorLike(source[field], depth + 1);
    }
    for (const field of NESTED_ERROR_LISTS) {
      const list = source[field];
      if (Array.isArray(list)) out[field] = list.filter(isErrorLike).map((item) => serializeErrorLike(item, depth + 1));
    }
  }
  return out;
}

/**
 * What a log line shows of an error: its type, message, stack and the fields above, never the
 * command, query or input it failed on. A string (an error's message logged alone) loses the
 * arguments Redis quotes; anything else is logged as it is.
 */
export function serializeError(value: unknown): unknown {
  if (typeof value === 'string') return withoutQuotedArguments(value);
  return isErrorLike(value) ? serializeErrorLike(value, 0) : value;
}

const ERROR_KEYS = ['err', 'error'];

/**
 * note: an Error logged under any other key ({ cause }, { reason }) goes through serializeError
 * too; pino would otherwise write its enumerable properties, the command among them.
 */
function serializeErrorsUnderAnyKey(object: Record<string, unknown>): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(object)) {
    if (!ERROR_KEYS.includes(key) && object[key] instanceof Error) {
      copy ??= { ...object };
      copy[key] = serializeError(object[key]);
    }
  }
  return copy ?? object;
}

function errorUnderErrorKey(object: unknown): ErrorLike | undefined {
  if (typeof object !== 'object' || object === null) return undefined;
  return ERROR_KEYS.map((key) => (object as Record<string, unknown>)[key]).find(isErrorLike);
}

/**
 * note: pino takes a line's message from its error when the call gives none (`log.error(err)`,
 * `log.error({ err })`); it is given here, without the arguments Redis quotes, as is every string
 * argument of a call.
 */
function logMethod(this: Logger, args: unknown[], method: (...args: unknown[]) => void): void {
  const [first] = args;
  const error = isErrorLike(first) ? first : errorUnderErrorKey(first);
  const given = args.map((arg) => (typeof arg === 'string' ? withoutQuotedArguments(arg) : arg));
  if (args.length === 1 && error !== undefined) given.push(withoutQuotedArguments(String(error.message)));
  method.apply(this, given);
}

type LogFormat = Config['logFormat'];

/** How a pretty line reads: `[12:00:01.234] INFO (api): Server listening at http://127.0.0.1:3000`, then its fields. */
const PRETTY_OPTIONS: PrettyOptions = { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' };

/**
 * pino-pretty's formatter, or undefined when it cannot be loaded. note: loaded here, only when a
 * pretty line is wanted, because it is a devDependency: the production image (`npm ci
 * --omit=dev`) has none, and must never need it.
 */
function loadPrettyFormatter(): ((line: string) => string) | undefined {
  try {
    const pinoPretty = createRequire(import.meta.url)('pino-pretty') as { prettyFactory: typeof prettyFactory };
    return pinoPretty.prettyFactory(PRETTY_OPTIONS);
  } catch {
    return undefined;
  }
}

/**
 * Every line as it is written, pretty (`format`) or not, to `destination` (stdout by default),
 * with whatever in it is shaped like an API key or a session token taken out (secret-shapes.ts):
 * in any field, whoever put it there (a path, a request id, an error's text, a caller's value).
 * note: pino writes each line as JSON, redacted and serialized as above, and pino-pretty only
 * re-reads that line, so a pretty line holds nothing the JSON line would not. Synchronous, as
 * pino's own stdout is: nothing is lost when a process exits right after logging.
 */
function scrubbedDestination(format: ((line: string) => string) | undefined, destination?: DestinationStream): DestinationStream {
  const out = destination ?? pino.destination({ dest: 1, sync: true });
  return { write: (line: string) => void out.write(format === undefined ? withoutSecrets(line) : format(withoutSecrets(line))) };
}

/**
 * `destination` defaults to stdout; tests pass a stream to read what was logged. `logFormat`:
 * `json` lines; `pretty` lines through pino-pretty; `auto` (LOG_FORMAT unset) pretty only when
 * the lines go to stdout and stdout is a terminal. Pretty lines without pino-pretty installed are
 * JSON lines: after one warning when LOG_FORMAT=pretty asked for them, quietly for `auto`.
 */
export function createLogger(
  config: Pick<Config, 'logLevel'> & Partial<Pick<Config, 'logFormat'>>,
  name: string,
  destination?: DestinationStream,
): Logger {
  const options = {
    name,
    level: config.logLevel,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    serializers: { req: serializeRequest, err: serializeError, error: serializeError },
    formatters: { log: serializeErrorsUnderAnyKey },
    hooks: { logMethod },
  };
  const format: LogFormat = config.logFormat ?? 'auto';
  const wantsPretty = format === 'pretty' || (format === 'auto' && destination === undefined && process.stdout.isTTY === true);
  const pretty = wantsPretty ? loadPrettyFormatter() : undefined;
  const log = pino(options, scrubbedDestination(pretty, destination));
  if (pretty !== undefined) return log;
  if (format === 'pretty') {
    log.warn('LOG_FORMAT=pretty needs the pino-pretty package, a devDependency (not installed here: the production image has none); writing JSON lines');
  }
  return log;
}

export function warnAboutDevSecrets(config: Config, log: Logger): void {
  if (config.usingDevSessionSecret) {
    log.warn(
      'SESSION_SECRET is not set: using the built-in development secret. Anyone can mint session tokens. Set SESSION_SECRET before exposing this service.',
    );
  }
}
