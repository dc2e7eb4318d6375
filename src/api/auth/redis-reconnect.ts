import { Cluster } from 'ioredis';
import type { RedisClient } from '../../shared/infra/redis.js';

/**
 * Calls `onReconnect` each time the client reaches Redis again after its first connection: a
 * restart, a network cut, or a failover to another master (a sentinel's switch, a cluster's new
 * master for the slot). note: the key cache is dropped then, because a failover can lose the
 * last auth-version write; the new master's older value must not revive keys cached before it.
 */
export function onRedisReconnect(redis: RedisClient, onReconnect: () => void): void {
  let connectedOnce = redis.status === 'ready';
  redis.on('ready', () => {
    if (connectedOnce) onReconnect();
    connectedOnce = true;
  });
  if (redis instanceof Cluster) redis.on('+node', () => connectedOnce && onReconnect());
}
