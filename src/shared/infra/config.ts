import { z } from 'zod';
import { parseDatabaseUrl } from './database-url.js';
import { parseRedisTarget, type RedisTarget } from './redis-target.js';

const DEV_SESSION_SECRET = 'dev-only-session-secret-change-me-0123456789';

/** Fastify `trustProxy` accepts a boolean, a hop count or a list of addresses/CIDRs. */
function parseTrustProxy(raw: string | undefined): boolean | number | string[] {
  if (raw === undefined || raw.trim() === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  return raw.split(',').map((part) => part.trim()).filter(Boolean);
}

const intFromEnv = (fallback: number) => z.coerce.number().int().positive().default(fallback);
/** note: compose files pass unset variables as empty strings (`${ADMIN_USER:-}`). */
const optionalFromEnv = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

/** note: not z.url(): WHATWG URL parsing refuses libpq's several hosts (`h1:5432,h2:5432`). */
const databaseUrlFromEnv = z.string().superRefine((value, ctx) => {
  try {
    parseDatabaseUrl(value);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: (error as Error).message });
  }
});

const EnvSchema = z.object({
  NODE_ENV: z.string().default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default('0.0.0.0'),
  DATABASE_URL: databaseUrlFromEnv.default('postgres://postgres@127.0.0.1:5432/bulk_import'),
  DATABASE_LISTEN_URL: optionalFromEnv(databaseUrlFromEnv),
  REDIS_URL: optionalFromEnv(z.url().regex(/^rediss?:\/\//, 'must start with redis:// or rediss://')),
  REDIS_CLUSTER_NODES: optionalFromEnv(z.string()),
  REDIS_SENTINELS: optionalFromEnv(z.string()),
  REDIS_SENTINEL_NAME: optionalFromEnv(z.string().min(1)),
  REDIS_SENTINEL_PASSWORD: optionalFromEnv(z.string()),
  REDIS_USERNAME: optionalFromEnv(z.string()),
  REDIS_PASSWORD: optionalFromEnv(z.string()),
  REDIS_TLS: optionalFromEnv(z.enum(['true', 'false'])),
  REDIS_SENTINEL_TLS: optionalFromEnv(z.enum(['true', 'false'])),
  // note: { and } for a Redis Cluster hash tag ({bulk-import}); see redis-target.ts.
  REDIS_PREFIX: z.string().min(1).max(100).regex(/^[A-Za-z0-9_.:{}-]+$/, 'letters, digits and _.:-{} only').default('bulk-import'),
  SESSION_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  TRUST_PROXY: z.string().optional(),
  CORS_ALLOWED_ORIGINS: z.string().default(''),
  UPGRADE_URL: z.url().default('https://example.com/pricing'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_FORMAT: optionalFromEnv(z.enum(['pretty', 'json'])),
  DATABASE_POOL_MAX: intFromEnv(10),
  WORKER_CONCURRENCY: intFromEnv(8),
  IMPORT_TIMEOUT_MS: intFromEnv(60_000),
  IMPORT_PICKUP_TIMEOUT_MS: intFromEnv(10_000),
  WORKER_LOCK_DURATION_MS: intFromEnv(10_000),
  ACCOUNT_MAX_IN_FLIGHT: intFromEnv(10),
  IMPORT_PREPARE_THREADS: optionalFromEnv(z.coerce.number().int().min(0).max(64)),
  REQUEST_TIMEOUT_MS: intFromEnv(30_000),
  SESSION_MAX_TTL_SEC: intFromEnv(604_800),
  OVERLOAD_EVENT_LOOP_DELAY_MS: intFromEnv(1_000),
  OVERLOAD_HEAP_USED_MB: intFromEnv(300),
  OVERLOAD_RSS_MB: intFromEnv(400),
  FAULT_INJECTION: z.enum(['none', 'pause-before-commit', 'crash-after-commit']).default('none'),
  ADMIN_USER: optionalFromEnv(z.string()),
  ADMIN_PASSWORD: optionalFromEnv(z.string().min(12, 'must be at least 12 characters')),
  METRICS_PORT: optionalFromEnv(z.coerce.number().int().min(0).max(65535)),
  // note: at least a day, so that an import outlives the Idempotency-Key that named it (kept 24
  // hours from its claim, made before the import began): a replay never finds its key without its
  // record. At most a century: more is a typo, and a few million days is out of PostgreSQL's range.
  IMPORT_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(30),
  /** the largest file `POST /v1/api/imports` takes (docs/imports.md#whole-files) */
  FILE_IMPORT_MAX_BYTES: intFromEnv(104_857_600),
  /** file imports of one account queued or running at once */
  ACCOUNT_MAX_FILE_IMPORTS: intFromEnv(2),
  // note: chunks of one file import a worker writes at once, each on its own connection of the
  // worker's pool (DATABASE_POOL_MAX) beside the bulk requests' WORKER_CONCURRENCY. Two let a file
  // use a second core; more take from the bulk requests (docs/operators.md#file-imports).
  FILE_IMPORT_WRITERS: z.coerce.number().int().min(1).max(16).default(2),
  // note: jobs a file import's job adds so that other workers write its chunks too
  // (file-import-queue.ts addFileImportHelpers): a file is written by as many workers as are free,
  // up to one more than this. 0 keeps each file to one worker; empty is unset (compose files).
  FILE_IMPORT_HELPERS: z.preprocess((v) => (v === '' ? undefined : v), z.coerce.number().int().min(0).max(16).default(3)),
  // note: how long a file's body may take to arrive, in place of REQUEST_TIMEOUT_MS: 100 MB in 10
  // minutes is some 170 KB a second. At most a day: Node's timers hold 24.8 days at most.
  FILE_UPLOAD_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(86_400_000).default(600_000),
  // note: uploads one API process receives at once; the next is answered 503 before its body is
  // read. Each holds at most a row being read and a batch (a few MB whatever it sends), so the
  // default keeps a process's uploads under some 100 MB (docs/operators.md#file-imports).
  FILE_UPLOADS_PER_PROCESS: z.coerce.number().int().min(1).max(1_000).default(16),
  // note: the connections an API process stages uploads on, apart from DATABASE_POOL_MAX: a batch
  // holds one for the moment it is written, and no other request waits for an upload's.
  FILE_UPLOAD_POOL_MAX: z.coerce.number().int().min(1).max(100).default(2),
  // note: how long an export's client may read nothing before it is dropped and its transaction
  // ended (docs/catalogue.md#export). From a second to a day, as FILE_UPLOAD_TIMEOUT_MS.
  EXPORT_IDLE_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(86_400_000).default(30_000),
  // note: the connections an API process exports on, apart from DATABASE_POOL_MAX, and so the
  // exports it streams at once: the next is answered 503 rather than waiting, or taking a
  // connection a bulk request needs (docs/catalogue.md#export).
  EXPORT_POOL_MAX: z.coerce.number().int().min(1).max(100).default(4),
});

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * The settings as the service uses them, derived from the environment. note: the type is this
 * schema's output (z.output), so a setting is written once, here, with its comment.
 */
const ConfigSchema = EnvSchema.transform((e, ctx) => {
  if (e.NODE_ENV === 'production' && e.SESSION_SECRET === undefined) {
    ctx.addIssue({ code: 'custom', message: 'SESSION_SECRET is required when NODE_ENV=production' });
  }
  if ((e.ADMIN_USER === undefined) !== (e.ADMIN_PASSWORD === undefined)) {
    ctx.addIssue({ code: 'custom', message: 'ADMIN_USER and ADMIN_PASSWORD must be set together' });
  }
  let redis: RedisTarget;
  try {
    const sentinelTls = e.REDIS_SENTINEL_TLS === undefined ? undefined : e.REDIS_SENTINEL_TLS === 'true';
    redis = parseRedisTarget({ ...e, REDIS_TLS: e.REDIS_TLS === 'true', REDIS_SENTINEL_TLS: sentinelTls });
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: (error as Error).message });
    return z.NEVER;
  }
  return {
    nodeEnv: e.NODE_ENV,
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL,
    /** the connection that LISTENs for auth changes: PostgreSQL itself or a session-mode pool */
    databaseListenUrl: e.DATABASE_LISTEN_URL ?? e.DATABASE_URL,
    databasePoolMax: e.DATABASE_POOL_MAX,
    /** one server, a cluster or a sentinel-managed master */
    redis,
    /** starts every Redis key of the service; holds a hash tag on a cluster */
    redisPrefix: e.REDIS_PREFIX,
    sessionSecret: e.SESSION_SECRET ?? DEV_SESSION_SECRET,
    /** true when SESSION_SECRET was not set and the development default is in use */
    usingDevSessionSecret: e.SESSION_SECRET === undefined,
    trustProxy: parseTrustProxy(e.TRUST_PROXY),
    corsAllowedOrigins: e.CORS_ALLOWED_ORIGINS.split(',').map((o) => o.trim()).filter(Boolean),
    upgradeUrl: e.UPGRADE_URL,
    logLevel: e.LOG_LEVEL,
    /** `pretty` (pino-pretty) or `json` lines; unset (`auto`): pretty when stdout is a terminal */
    logFormat: e.LOG_FORMAT ?? ('auto' as const),
    workerConcurrency: e.WORKER_CONCURRENCY,
    importTimeoutMs: e.IMPORT_TIMEOUT_MS,
    importPickupTimeoutMs: e.IMPORT_PICKUP_TIMEOUT_MS,
    workerLockDurationMs: e.WORKER_LOCK_DURATION_MS,
    /** bulk imports of one account in flight at once, across all API replicas */
    accountMaxInFlight: e.ACCOUNT_MAX_IN_FLIGHT,
    /** worker threads that parse and validate large bulk bodies; 0 = on the event loop; unset = the default */
    importPrepareThreads: e.IMPORT_PREPARE_THREADS,
    /** how long a request's headers and body may take to arrive (not the wait for an import) */
    requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
    /** the longest lifetime (exp - iat) a session token may have */
    sessionMaxTtlSec: e.SESSION_MAX_TTL_SEC,
    /** new bulk imports are shed (503) while the mean event-loop delay of the last second is above this */
    overloadEventLoopDelayMs: e.OVERLOAD_EVENT_LOOP_DELAY_MS,
    /** ... or while the V8 heap in use is above this many MB */
    overloadHeapUsedMb: e.OVERLOAD_HEAP_USED_MB,
    /** ... or while the process's resident memory (heap, Buffers such as request bodies, threads) is above this many MB */
    overloadRssMb: e.OVERLOAD_RSS_MB,
    /** test-only fault hooks of the worker; honoured only when NODE_ENV=test */
    faultInjection: e.NODE_ENV === 'test' ? e.FAULT_INJECTION : ('none' as const),
    /** Basic-auth credentials of Bull Board and the API's /metrics; both are off without them */
    admin: e.ADMIN_USER !== undefined && e.ADMIN_PASSWORD !== undefined ? { user: e.ADMIN_USER, password: e.ADMIN_PASSWORD } : undefined,
    /** the worker's /metrics port (0: any free port); off when undefined */
    metricsPort: e.METRICS_PORT,
    /** days an import is kept after it ended; then the workers purge it */
    importRetentionDays: e.IMPORT_RETENTION_DAYS,
    fileImportMaxBytes: e.FILE_IMPORT_MAX_BYTES,
    accountMaxFileImports: e.ACCOUNT_MAX_FILE_IMPORTS,
    fileUploadTimeoutMs: e.FILE_UPLOAD_TIMEOUT_MS,
    /** uploads one API process receives at once */
    fileUploadsPerProcess: e.FILE_UPLOADS_PER_PROCESS,
    /** the connections an API process stages uploads on (its own pool) */
    fileUploadPoolMax: e.FILE_UPLOAD_POOL_MAX,
    /** an export whose client reads nothing for this long is dropped */
    exportIdleTimeoutMs: e.EXPORT_IDLE_TIMEOUT_MS,
    /** the connections an API process exports on (its own pool): the exports it streams at once */
    exportPoolMax: e.EXPORT_POOL_MAX,
    fileImportWriters: e.FILE_IMPORT_WRITERS,
    fileImportHelpers: e.FILE_IMPORT_HELPERS,
  };
});

export type Config = z.output<typeof ConfigSchema>;

/**
 * Parses the environment once per entry point. Nothing else reads process.env, so every
 * setting the service honours is listed here and in docs/configuration.md.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = ConfigSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => (issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message));
    throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
  }
  return parsed.data;
}
