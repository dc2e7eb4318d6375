import { inject } from 'vitest';
import { loadConfig } from '../../src/shared/infra/config.js';
import { createRedis, masterNodes, type RedisClient } from '../../src/shared/infra/redis.js';
import { testRedisPrefix } from './test-database.js';

/** The variables that point the service at this run's Redis: REDIS_URL, or REDIS_CLUSTER_NODES. */
export function testRedisEnv(): Record<string, string> {
  return inject('redisEnv');
}

/**
 * A client of this run's Redis, a single server or a cluster alike. note: the waiting kind, so
 * a test can send commands before the connection is up.
 */
export function testRedisClient(): RedisClient {
  return createRedis(loadConfig({ ...testRedisEnv(), REDIS_PREFIX: testRedisPrefix() }), 'blocking');
}

/**
 * Every key matching `pattern`, from every master. note: KEYS or SCAN on a cluster client asks
 * one node only, and a check that finds nothing there would pass without looking.
 */
export async function keysMatching(redis: RedisClient, pattern: string): Promise<string[]> {
  const found: string[] = [];
  for (const node of masterNodes(redis)) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      cursor = next;
      found.push(...batch);
    } while (cursor !== '0');
  }
  return found;
}
