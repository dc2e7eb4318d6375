import { z } from 'zod';
import type { Logger } from '../infra/logger.js';
import type { RedisClient } from '../infra/redis.js';

/**
 * What a worker tells the waiting API: the job's result once its import committed, or its
 * reason once it failed for good (never a failed attempt that is retried). note: `jobId` is the
 * import's id (its job's id), named so on the wire: during a rolling deploy the API and the
 * workers of two versions read each other's replies, so the field keeps its name; the code calls
 * it importId on either side of it.
 */
export const ImportReplySchema = z.discriminatedUnion('state', [
  z.object({ jobId: z.string().min(1), state: z.literal('completed'), result: z.unknown() }),
  z.object({ jobId: z.string().min(1), state: z.literal('failed'), reason: z.string() }),
]);
export type ImportReply = z.infer<typeof ImportReplySchema>;

/**
 * One channel for every API process, named under the prefix: each process takes the replies of
 * the jobs it waits on and ignores the rest, so a request waiting on a job another process added
 * (an Idempotency-Key repeat) is answered as fast as the one that added it. note: pub/sub rather
 * than a list the API pops: Redis pushes each reply to the subscribers as it is published, so
 * replies that arrive together reach the API in one read, where a blocking pop (BRPOP, BLMPOP, or
 * the queue's events through XREAD) costs a round trip after each batch. A reply published while
 * a process is not subscribed (reconnecting) is lost to it, which its poll covers. On a Redis
 * Cluster a PUBLISH goes to every node (a few hundred bytes per import). With Redis ACLs the user
 * needs the channel too (`&<prefix>:import-replies`): without it PUBLISH and SUBSCRIBE are
 * refused and every answer waits for the poll.
 */
export function importReplyChannel(prefix: string): string {
  return `${prefix}:import-replies`;
}

/** The worker's side: sends a job's outcome to the API processes, one of which waits for it. */
export class ImportReplySender {
  /** note: a refusal (no channel permission) would repeat for every job: logged once */
  private warned = false;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly log: Logger,
  ) {}

  /** Best effort, never throws: the API's poll settles the wait when a reply is lost. */
  send(reply: ImportReply): void {
    this.redis.publish(importReplyChannel(this.prefix), JSON.stringify(reply)).catch((err: unknown) => {
      if (this.warned) return;
      this.warned = true;
      this.log.warn({ err, jobId: reply.jobId }, 'could not send an import reply; the API falls back to polling the job (logged once)');
    });
  }
}
