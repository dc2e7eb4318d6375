import { randomUUID } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImportJobDataSchema, type ImportJobData, type ImportResult } from '../../../src/shared/import/import-job.js';
import { ImportReplySender, importReplyChannel } from '../../../src/shared/import/import-reply.js';
import { createLogger } from '../../../src/shared/infra/logger.js';
import { waitForRedis, type RedisClient } from '../../../src/shared/infra/redis.js';
import { replyIfFailedForGood } from '../../../src/worker/import-processor.js';
import { testRedisPrefix } from '../../support/test-database.js';
import { testRedisClient } from '../../support/test-redis.js';

const job = { kind: 'listings' as const, accountId: randomUUID(), requestId: 'req-1', total: 1, rowCount: 1, errors: [] };
const silentLog = () => createLogger({ logLevel: 'silent', logFormat: 'json' }, 'test');

/** Every message published under the prefix's reply channel (or one that would start as it does), as a subscriber hears it. */
async function hearReplies(prefix: string): Promise<{ heard: { channel: string; message: unknown }[]; close(): void }> {
  const subscriber = testRedisClient();
  const heard: { channel: string; message: unknown }[] = [];
  subscriber.on('pmessage', (_pattern: string, channel: string, message: string) => heard.push({ channel, message: JSON.parse(message) }));
  await subscriber.psubscribe(`${importReplyChannel(prefix)}*`);
  return { heard, close: () => subscriber.disconnect() };
}

/** The worker's side of a reply: one channel under the prefix, whatever the job data says. */
describe('ImportReplySender', () => {
  let redis: RedisClient;
  let prefix: string;
  let sender: ImportReplySender;
  let listening: Awaited<ReturnType<typeof hearReplies>>;

  beforeAll(async () => {
    redis = testRedisClient();
    await waitForRedis(redis);
    prefix = testRedisPrefix();
    sender = new ImportReplySender(redis, prefix, silentLog());
    listening = await hearReplies(prefix);
  });
  afterAll(() => {
    listening?.close();
    redis?.disconnect();
  });

  it('publishes the reply on the one channel under the prefix', async () => {
    sender.send({ jobId: 'job-1', state: 'completed', result: { inserted: 1, skipped: 0, errors: [] } });
    await expect.poll(() => listening.heard.length).toBe(1);
    expect(listening.heard).toEqual([
      { channel: importReplyChannel(prefix), message: { jobId: 'job-1', state: 'completed', result: { inserted: 1, skipped: 0, errors: [] } } },
    ]);
    listening.heard.length = 0;
  });

  it('a job from an API before 0.6.0 still parses: the replyTo its data names (anything at all) is dropped', () => {
    for (const replyTo of [randomUUID(), '*', '../x', 42]) expect(ImportJobDataSchema.parse({ ...job, replyTo })).not.toHaveProperty('replyTo');
  });
});

/**
 * A failure is news for the API only once the job failed for good: told of a failed attempt that
 * BullMQ then retries, the API would fence out an import the retry could still write.
 */
describe('replyIfFailedForGood', () => {
  it('sends nothing after an attempt that is retried, and one reply once the last attempt fails', async () => {
    const prefix = testRedisPrefix();
    const listening = await hearReplies(prefix);
    const connection = testRedisClient();
    const sender = new ImportReplySender(connection, prefix, silentLog());
    const queue = new Queue<ImportJobData, ImportResult>('reply-on-failure', { connection, prefix });
    const failures: number[] = [];
    const worker = new Worker<ImportJobData, ImportResult>(
      'reply-on-failure',
      async (job) => {
        throw new Error(`attempt ${job.attemptsMade + 1} fails`);
      },
      { connection, prefix },
    );
    worker.on('failed', (job) => {
      replyIfFailedForGood(job, sender);
      failures.push(job?.attemptsMade ?? 0);
    });
    try {
      const added = await queue.add('listings', job, { attempts: 2, backoff: { type: 'fixed', delay: 50 } });
      await expect.poll(() => failures.length, { timeout: 10_000 }).toBe(2);
      await expect.poll(() => listening.heard.length).toBeGreaterThan(0);
      // note: a moment more, so that a reply to the first attempt would be heard as well.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(listening.heard).toEqual([
        { channel: importReplyChannel(prefix), message: { jobId: added.id, state: 'failed', reason: 'attempt 2 fails' } },
      ]);
    } finally {
      await worker.close();
      await queue.obliterate({ force: true });
      await queue.close();
      connection.disconnect();
      listening.close();
    }
  });
});
