import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchedReads } from '../../../src/shared/infra/batched-reads.js';
import { waitForRedis, type RedisClient } from '../../../src/shared/infra/redis.js';
import { testRedisPrefix } from '../../support/test-database.js';
import { testRedisClient } from '../../support/test-redis.js';

/** The reads every API-key request makes, sent together (src/shared/infra/batched-reads.ts). */
describe('BatchedReads', () => {
  let redis: RedisClient;
  let prefix: string;
  /** the MGETs sent, as the keys each carried */
  const sent: string[][] = [];

  beforeAll(async () => {
    redis = testRedisClient();
    await waitForRedis(redis);
    prefix = testRedisPrefix();
    // note: the real client, its MGETs noted on their way
    const mget = redis.mget.bind(redis) as (...keys: string[]) => Promise<(string | null)[]>;
    (redis as unknown as { mget: (...keys: string[]) => Promise<(string | null)[]> }).mget = (...keys: string[]) => {
      sent.push(keys);
      return mget(...keys);
    };
  });
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis?.disconnect();
  });

  it('sends the reads asked for together in one MGET, each key once, and gives each its value', async () => {
    await redis.set(`${prefix}:a`, '1');
    await redis.set(`${prefix}:b`, '2');
    const reads = new BatchedReads(redis);
    sent.length = 0;
    const values = await Promise.all([`${prefix}:a`, `${prefix}:b`, `${prefix}:a`, `${prefix}:none`, `${prefix}:b`].map((key) => reads.get(key)));
    expect(values).toEqual(['1', '2', '1', null, '2']);
    expect(sent).toEqual([[`${prefix}:a`, `${prefix}:b`, `${prefix}:none`]]);
  });

  it('gives a request\'s keys in their order, in the MGET of the reads asked for with them', async () => {
    await redis.set(`${prefix}:failures`, '3');
    await redis.set(`${prefix}:auth-version`, 'v1');
    const reads = new BatchedReads(redis);
    sent.length = 0;
    const [first, second, single] = await Promise.all([
      reads.getAll([`${prefix}:failures`, `${prefix}:auth-version`]),
      reads.getAll([`${prefix}:no-failures`, `${prefix}:auth-version`]),
      reads.get(`${prefix}:failures`),
    ]);
    expect(first).toEqual(['3', 'v1']);
    expect(second).toEqual([null, 'v1']);
    expect(single).toBe('3');
    expect(sent).toEqual([[`${prefix}:failures`, `${prefix}:auth-version`, `${prefix}:no-failures`]]);
  });

  it('sends at most 500 keys in one MGET; the reads beyond go in the next', async () => {
    const reads = new BatchedReads(redis);
    sent.length = 0;
    const keys = Array.from({ length: 501 }, (_, i) => `${prefix}:many-${i}`);
    const values = await Promise.all(keys.map((key) => reads.get(key)));
    expect(values.every((value) => value === null)).toBe(true);
    expect(sent.map((batch) => batch.length)).toEqual([500, 1]);
  });

  it('never answers a read from an earlier reply: a value changed after one read is what the next read gets', async () => {
    const reads = new BatchedReads(redis);
    await redis.set(`${prefix}:version`, '1');
    expect(await reads.get(`${prefix}:version`)).toBe('1');
    await redis.incr(`${prefix}:version`);
    expect(await reads.get(`${prefix}:version`)).toBe('2');
  });

  it('fails every read of a batch whose MGET failed, and the next batch reads again', async () => {
    const reads = new BatchedReads(redis);
    await redis.set(`${prefix}:hash`, 'x');
    // note: a client that is closed refuses the MGET
    const closed = testRedisClient();
    await waitForRedis(closed);
    closed.disconnect();
    const failing = new BatchedReads(closed);
    const results = await Promise.allSettled([failing.get(`${prefix}:hash`), failing.get(`${prefix}:other`)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(await reads.get(`${prefix}:hash`)).toBe('x');
  });
});
