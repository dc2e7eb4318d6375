import type { Redis } from 'ioredis';

/** Deletes every key under `prefix` (a bench stack's own namespace), a SCAN page at a time. */
export async function dropRedisPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== '0');
}
