import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RowsHandOver } from '../../../src/shared/import/rows-hand-over.js';
import { ImportRowsStore } from '../../../src/shared/import/rows-store.js';
import type { RedisClient } from '../../../src/shared/infra/redis.js';
import { testRedisPrefix } from '../../support/test-database.js';
import { testRedisClient, testRedisEnv } from '../../support/test-redis.js';

const isCluster = () => 'REDIS_CLUSTER_NODES' in testRedisEnv();

describe('ImportRowsStore', () => {
  let redis: RedisClient;
  let prefix: string;
  let store: ImportRowsStore;

  beforeAll(() => {
    redis = testRedisClient();
    prefix = testRedisPrefix();
    store = new ImportRowsStore(redis, prefix);
  });
  afterAll(() => {
    redis?.disconnect();
  });

  it('keeps the rows of a job until they are deleted, under the prefix, with an expiry', async () => {
    const importId = randomUUID();
    await store.put(importId, '[{"title":"a"}]');
    expect(await store.get(importId)).toBe('[{"title":"a"}]');
    const ttlMs = await redis.pttl(`${prefix}:import-rows:${importId}`);
    expect(ttlMs).toBeGreaterThan(59 * 60_000);
    expect(ttlMs).toBeLessThanOrEqual(60 * 60_000);
    await store.delete(importId);
    expect(await store.get(importId)).toBeNull();
  });

  it('answers null for rows that were never stored', async () => {
    expect(await store.get(randomUUID())).toBeNull();
  });

  // On one connection the API stores a job's rows and adds the job without waiting in between;
  // that is safe only because BullMQ sends its commands on the connection it is given, in order
  // after ours. A cluster client gives no such order, and the store says so.
  it.runIf(!isCluster())('shares the connection a BullMQ queue is given (the order rows-then-job relies on it)', async () => {
    expect(store.keepsSendOrder).toBe(true);
    const queue = new Queue('order-check', { connection: redis, prefix });
    try {
      await queue.waitUntilReady();
      // note: BullMQ types its client as its own abstraction; it forwards to the ioredis instance.
      const client = (await queue.getBackend().client) as unknown as Redis;
      expect(await client.client('ID')).toBe(await redis.client('ID'));
    } finally {
      await queue.close();
    }
  });

  it.runIf(isCluster())('on a cluster, asks callers to wait for the rows before adding the job', () => {
    expect(store.keepsSendOrder).toBe(false);
  });
});

describe('RowsHandOver', () => {
  it('gives its rows once and keeps no reference to them', () => {
    const rows = new RowsHandOver('[{"title":"a"}]');
    expect(rows.take()).toBe('[{"title":"a"}]');
    expect(() => rows.take()).toThrow('the rows of this import were already handed over');
    expect(JSON.stringify(rows)).toBe('{}');
  });
});
