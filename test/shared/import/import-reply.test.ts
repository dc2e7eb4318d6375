import { randomUUID } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImportJobDataSchema, type ImportJobData, type ImportResult } from '../../../src/shared/import/import-job.js';
import { ImportReplySender, REPLY_TTL_MS, importReplyKey } from '../../../src/shared/import/import-reply.js';
import { createLogger } from '../../../src/shared/infra/logger.js';
import { waitForRedis, type RedisClient } from '../../../src/shared/infra/redis.js';
import { testRedisPrefix } from '../../support/test-database.js';
import { replyIfFailedForGood } from '../../../src/worker/import-processor.js';
import { keysMatching, testRedisClient } from '../../support/test-redis.js';

const job = { kind: 'listings' as const, accountId: randomUUID(), requestId: 'req-1', total: 1, rowCount: 1, errors: [] };

/** The worker's side of a reply: the job data names the API process; the queue is a trust boundary. */
describe('ImportReplySender', () => {
  let redis: RedisClient;
  let prefix: string;
  let sender: ImportReplySender;

  beforeAll(async () => {
    redis = testRedisClient();
    // note: a cluster client sends a MULTI queued before it is ready after other queued commands.
    await waitForRedis(redis);
    prefix = testRedisPrefix();
    sender = new ImportReplySender(redis, prefix, createLogger({ logLevel: 'silent', logFormat: 'json' }, 'test'));
  });
  afterAll(() => {
    redis?.disconnect();
  });

  it('pushes the reply onto the list of the process named, under the prefix, with an expiry', async () => {
    const replyTo = randomUUID();
    sender.send(replyTo, { jobId: 'job-1', state: 'completed', result: { inserted: 1, skipped: 0, errors: [] } });
    const key = importReplyKey(prefix, replyTo);
    const [, raw] = (await redis.brpop(key, 2)) ?? [];
    expect(JSON.parse(raw!)).toEqual({ jobId: 'job-1', state: 'completed', result: { inserted: 1, skipped: 0, errors: [] } });
    sender.send(replyTo, { jobId: 'job-2', state: 'failed', reason: 'no' });
    await expect.poll(() => redis.pttl(key)).toBeGreaterThan(0);
    expect(await redis.pttl(key)).toBeLessThanOrEqual(REPLY_TTL_MS);
    await redis.del(key);
  });

  it.each([
    ['a key pattern', '*'],
    ['a path out of the prefix', '../x'],
    ['a colon', 'a:b'],
    ['a brace (another hash tag)', '{other}'],
    ['an over-long id', 'a'.repeat(65)],
    ['an empty id', ''],
    ['a number', 42],
  ])('a job whose replyTo is %s still runs (the field is dropped) and sends no reply', async (_case, replyTo) => {
    expect(ImportJobDataSchema.parse({ ...job, replyTo }).replyTo).toBeUndefined();
    sender.send(replyTo, { jobId: 'job-3', state: 'failed', reason: 'no' });
    // note: a command to the prefix's slot after the send (one connection, in order), so a reply
    // sent would be there by now.
    await redis.get(`${prefix}:none`);
    expect(await keysMatching(redis, `${prefix}:*`)).toEqual([]);
  });

  it('a job from an older API has no replyTo, and one from this API keeps it', () => {
    expect(ImportJobDataSchema.parse(job).replyTo).toBeUndefined();
    const replyTo = randomUUID();
    expect(ImportJobDataSchema.parse({ ...job, replyTo }).replyTo).toBe(replyTo);
  });
});

/**
 * A failure is news for the API only once the job failed for good: told of a failed attempt that
 * BullMQ then retries, the API would fence out an import the retry could still write.
 */
describe('replyIfFailedForGood', () => {
  it('sends nothing after an attempt that is retried, and one reply once the last attempt fails', async () => {
    const redis = testRedisClient();
    await waitForRedis(redis);
    const prefix = testRedisPrefix();
    const sender = new ImportReplySender(redis, prefix, createLogger({ logLevel: 'silent', logFormat: 'json' }, 'test'));
    const connection = testRedisClient();
    const queue = new Queue<ImportJobData, ImportResult>('reply-on-failure', { connection, prefix });
    const repliesAfter: number[] = [];
    const replyTo = randomUUID();
    const key = importReplyKey(prefix, replyTo);
    const worker = new Worker<ImportJobData, ImportResult>(
      'reply-on-failure',
      async (job) => {
        throw new Error(`attempt ${job.attemptsMade + 1} fails`);
      },
      { connection, prefix },
    );
    worker.on('failed', (job) => {
      replyIfFailedForGood(job, sender);
      // note: the reply, when sent, is queued on `redis` before this read: one connection, in order.
      void redis.llen(key).then((length) => repliesAfter.push(length));
    });
    try {
      await queue.add('listings', { ...job, replyTo }, { attempts: 2, backoff: { type: 'fixed', delay: 50 } });
      await expect.poll(() => repliesAfter.length, { timeout: 10_000 }).toBe(2);
      expect(repliesAfter).toEqual([0, 1]);
      const [, raw] = (await redis.brpop(key, 1)) ?? [];
      expect(JSON.parse(raw!)).toEqual({ jobId: expect.any(String), state: 'failed', reason: 'attempt 2 fails' });
    } finally {
      await worker.close();
      await queue.obliterate({ force: true });
      await queue.close();
      connection.disconnect();
      redis.disconnect();
    }
  });
});
