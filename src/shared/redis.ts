import { Redis } from 'ioredis';
import type { Config } from './config.js';

/**
 * - `command`: rate limits, lockouts, auth version and health. Fails fast when Redis is away (no
 *   offline queue) so a request gets an error instead of hanging. Auto-pipelined: the commands
 *   of one request (and of concurrent ones) leave in one write, which cuts the syscalls that
 *   dominate the API-key hot path.
 * - `producer`: the API's BullMQ queue and the rows of its jobs (ImportRowsStore), on one
 *   connection so that a job's rows arrive before the job. Fails fast too, but is not
 *   auto-pipelined: BullMQ's maintainers have seen odd behaviour with it.
 * - `blocking`: BullMQ workers and queue events. They must wait for Redis forever
 *   (`maxRetriesPerRequest: null`) as BullMQ requires.
 */
export type RedisRole = 'command' | 'producer' | 'blocking';

export function createRedis(config: Pick<Config, 'redisUrl'>, role: RedisRole): Redis {
  if (role === 'blocking') {
    return new Redis(config.redisUrl, { maxRetriesPerRequest: null, enableReadyCheck: true });
  }
  return new Redis(config.redisUrl, {
    enableAutoPipelining: role === 'command',
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    commandTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
  });
}

/** Resolves once the client is ready; a command client refuses commands before that. */
export async function waitForRedis(redis: Redis, timeoutMs = 10_000): Promise<void> {
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
