import { z } from 'zod';
import type { Logger } from '../infra/logger.js';
import type { RedisClient } from '../infra/redis.js';

/**
 * Where a job's API process waits for its answer: a random id per API process start, which the
 * job data carries as `replyTo`. note: the queue is a trust boundary, so a worker reads it as
 * untrusted: a short plain token, only ever used as the last part of a key under REDIS_PREFIX.
 */
export const ReplyToSchema = z.string().regex(/^[A-Za-z0-9-]{1,64}$/);

/**
 * What a worker tells the waiting API, the same news as the queue's own `completed` and
 * `failed` events: the job's result once its import committed, or its reason once it failed
 * for good (never a failed attempt that is retried).
 */
export const ImportReplySchema = z.discriminatedUnion('state', [
  z.object({ jobId: z.string().min(1), state: z.literal('completed'), result: z.unknown() }),
  z.object({ jobId: z.string().min(1), state: z.literal('failed'), reason: z.string() }),
]);
export type ImportReply = z.infer<typeof ImportReplySchema>;

/**
 * One channel per API process, named under the prefix. note: pub/sub rather than a list the API
 * pops: Redis pushes each reply to the subscriber as it is published, so replies that arrive
 * together reach the API in one read, where a blocking pop (BRPOP, BLMPOP, or QueueEvents'
 * XREAD) costs a round trip after each batch. A reply published while nobody listens is simply
 * lost, which the queue's event and the poll cover. On a Redis Cluster a PUBLISH goes to every
 * node (a few hundred bytes per import). With Redis ACLs the user needs the channels too
 * (`&<prefix>:import-replies:*`): without them PUBLISH and SUBSCRIBE are refused and every
 * answer comes the slower way.
 */
export function importReplyChannel(prefix: string, replyTo: string): string {
  return `${prefix}:import-replies:${replyTo}`;
}

/** The worker's side: sends a job's outcome to the API process waiting for it. */
export class ImportReplySender {
  /** note: a refusal (no channel permission) would repeat for every job: logged once */
  private warned = false;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly log: Logger,
  ) {}

  /**
   * Best effort, never throws: the API settles the wait through the queue's event or its poll
   * when a reply is lost. `replyTo` comes from the job data; anything but a ReplyToSchema token
   * (an older API's job has none; a forged one may hold anything) sends nothing.
   */
  send(replyTo: unknown, reply: ImportReply): void {
    const target = ReplyToSchema.safeParse(replyTo);
    if (!target.success) return;
    this.redis.publish(importReplyChannel(this.prefix, target.data), JSON.stringify(reply)).catch((err: unknown) => {
      if (this.warned) return;
      this.warned = true;
      this.log.warn({ err, jobId: reply.jobId }, 'could not send an import reply; the API falls back to the queue event (logged once)');
    });
  }
}
