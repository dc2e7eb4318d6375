import { describe, expect, it } from 'vitest';
import { onRedisReconnect } from '../../src/api/auth/redis-reconnect.js';
import { waitForRedis } from '../../src/shared/infra/redis.js';
import { testRedisClient } from '../support/test-redis.js';

async function until(probe: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`not reached within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('onRedisReconnect (the API drops its key cache when Redis comes back)', () => {
  it('is not called for the first connection, and again after each reconnection', async () => {
    const redis = testRedisClient();
    try {
      await waitForRedis(redis);
      let calls = 0;
      onRedisReconnect(redis, () => {
        calls += 1;
      });
      expect(calls).toBe(0);

      // note: disconnect(true) drops the connection and lets the client reconnect, as after a
      // failover or a network cut.
      // A cluster client may report a reconnection more than once (each node, then ready).
      redis.disconnect(true);
      await until(() => calls >= 1 && redis.status === 'ready');
      const afterFirst = calls;
      redis.disconnect(true);
      await until(() => calls > afterFirst && redis.status === 'ready');
      expect(await redis.ping()).toBe('PONG');
    } finally {
      redis.disconnect();
    }
  });

  it('is not called when the client connects for the first time after it was registered', async () => {
    const redis = testRedisClient();
    try {
      let calls = 0;
      onRedisReconnect(redis, () => {
        calls += 1;
      });
      await waitForRedis(redis);
      await redis.ping();
      expect(calls).toBe(0);
    } finally {
      redis.disconnect();
    }
  });
});
