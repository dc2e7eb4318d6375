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
 * How long a reply list outlives its last reply. note: the API's listener takes a reply within
 * a round trip; this only bounds what waits for an API process that stopped (its id dies with
 * it), and a reply that waited this long is moot: the queue's event or the poll answered.
 */
export const REPLY_TTL_MS = 60_000;

/**
 * One list per API process, under the prefix: on a Redis Cluster it shares the prefix's hash
 * tag, hence the slot (and the master) of the queue. note: a list rather than pub/sub: a key
 * under the prefix needs no ACL beyond the queue's (Redis 7 grants a new user no channel), a
 * cluster does not broadcast it to every node, and a reply waits out a listener's reconnect.
 */
export function importReplyKey(prefix: string, replyTo: string): string {
  return `${prefix}:import-replies:${replyTo}`;
}

/** The worker's side: sends a job's outcome to the API process waiting for it. */
export class ImportReplySender {
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
    const key = importReplyKey(this.prefix, target.data);
    // note: MULTI, so the list never exists without its expiry.
    this.redis
      .multi()
      .lpush(key, JSON.stringify(reply))
      .pexpire(key, REPLY_TTL_MS)
      .exec()
      .catch((err: unknown) => this.log.warn({ err, jobId: reply.jobId }, 'could not send an import reply; the API falls back to the queue event'));
  }
}
