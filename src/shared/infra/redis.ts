import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { Config } from './config.js';
import type { RedisAuth, RedisTarget } from './redis-target.js';

/** One Redis server (or a sentinel-managed master) or a Redis Cluster: the service uses either alike. */
export type RedisClient = Redis | Cluster;

/**
 * - `command`: rate limits, lockouts, auth version and health. Fails fast when Redis is away (no
 *   offline queue) so a request gets an error instead of hanging. Auto-pipelined: the commands
 *   of concurrent requests leave in one write, which cuts the syscalls that dominate the API-key
 *   hot path; but not MGET, see BATCHED_ELSEWHERE.
 * - `producer`: the API's BullMQ queue and the rows of its jobs (ImportRowsStore). Fails fast
 *   too, but is not auto-pipelined: BullMQ's maintainers have seen odd behaviour with it.
 * - `blocking`: BullMQ workers and the API's subscriber to the import replies. They must wait
 *   for Redis forever (`maxRetriesPerRequest: null`) as BullMQ requires.
 */
export type RedisRole = 'command' | 'producer' | 'blocking';

const FAIL_FAST: RedisOptions = {
  maxRetriesPerRequest: 1,
  connectTimeout: 2_000,
  commandTimeout: 2_000,
};
/**
 * Commands the `command` client sends as they come, outside its auto-pipeline. note: the reads of
 * concurrent requests are already one MGET per round of I/O (BatchedReads); auto-pipelining that
 * MGET again built a pipeline for it and held it for another round (and behind the pipeline in
 * flight), which cost the API a few µs of CPU per GET /v1/api/me at c=32, up to a tenth of it
 * (bench/README.md, issue 43). The quota script stays auto-pipelined: one per request whose
 * account holds no share here, many at once.
 */
const BATCHED_ELSEWHERE = ['mget'];

const WAIT_FOREVER: RedisOptions = { maxRetriesPerRequest: null, enableReadyCheck: true };
const reconnectDelay = (attempt: number) => Math.min(attempt * 100, 2_000);

/**
 * note: after a failover the old master may answer as a replica for a moment (READONLY); the
 * client reconnects, finds the new master and sends the command again.
 */
const reconnectOnReadOnly = (error: Error): 2 | false => (error.message.startsWith('READONLY') ? 2 : false);

function serverAuth(auth: RedisAuth): RedisOptions {
  return {
    ...(auth.username === undefined ? {} : { username: auth.username }),
    ...(auth.password === undefined ? {} : { password: auth.password }),
    ...(auth.tls ? { tls: {} } : {}),
  };
}

export function createRedis(config: Pick<Config, 'redis'>, role: RedisRole): RedisClient {
  const perRole: RedisOptions = role === 'blocking' ? WAIT_FOREVER : FAIL_FAST;
  return connect(config.redis, role, perRole);
}

function connect(target: RedisTarget, role: RedisRole, perRole: RedisOptions): RedisClient {
  const failFast = role !== 'blocking';
  if (target.mode === 'cluster') {
    const options: ClusterOptions = {
      redisOptions: { ...serverAuth(target), ...perRole, reconnectOnError: reconnectOnReadOnly },
      enableAutoPipelining: role === 'command',
      autoPipeliningIgnoredCommands: BATCHED_ELSEWHERE,
      enableOfflineQueue: !failFast,
      clusterRetryStrategy: reconnectDelay,
      // note: every key of the service shares one hash tag, hence one slot and one master; reads
      // go there too, so a read never sees a replica that lags behind the write before it.
      scaleReads: 'master',
      slotsRefreshTimeout: 2_000,
    };
    return new Cluster(target.nodes, options);
  }
  const common: RedisOptions = {
    ...perRole,
    enableAutoPipelining: role === 'command',
    autoPipeliningIgnoredCommands: BATCHED_ELSEWHERE,
    ...(failFast ? { enableOfflineQueue: false, retryStrategy: reconnectDelay } : {}),
    reconnectOnError: reconnectOnReadOnly,
  };
  if (target.mode === 'sentinel') {
    return new Redis({
      ...serverAuth(target),
      ...common,
      sentinels: target.sentinels,
      name: target.name,
      ...(target.sentinelPassword === undefined ? {} : { sentinelPassword: target.sentinelPassword }),
      // note: in sentinel mode ioredis ignores `tls` for the master unless told so, and the
      // sentinels' own connections take their TLS from `sentinelTLS`.
      ...(target.tls ? { enableTLSForSentinelMode: true } : {}),
      ...(target.sentinelTls ? { sentinelTLS: {} } : {}),
      // note: +switch-master from a sentinel makes the client leave the old master at once,
      // rather than when the old master stops answering or starts refusing writes.
      failoverDetector: true,
      sentinelRetryStrategy: reconnectDelay,
    });
  }
  // note: a rediss:// URL is TLS whatever REDIS_TLS says.
  return new Redis(target.url, { ...common, ...(target.tls ? { tls: {} } : {}) });
}

/** Resolves once the client is ready; a command client refuses commands before that. */
export async function waitForRedis(redis: RedisClient, timeoutMs = 10_000): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`Redis was not ready within ${timeoutMs} ms`));
    }, timeoutMs);
    const onReady = () => {
      cleanup();
      resolve();
    };
    const cleanup = () => {
      clearTimeout(timer);
      redis.off('ready', onReady);
    };
    redis.on('ready', onReady);
  });
}

/** Every master of the target, for commands that act on one node's keys only (SCAN). */
export function masterNodes(redis: RedisClient): Redis[] {
  return redis instanceof Cluster ? redis.nodes('master') : [redis];
}
