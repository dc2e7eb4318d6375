import { randomUUID } from 'node:crypto';
import type { Config } from '../../shared/infra/config.js';
import type { Logger } from '../../shared/infra/logger.js';
import { createRedis, type RedisClient } from '../../shared/infra/redis.js';
import { ImportReplySchema, importReplyKey, type ImportReply } from '../../shared/import/import-reply.js';

/**
 * How long one BRPOP blocks before it is sent again. note: not a latency: a reply wakes it at
 * once; a bound on how long a command held on a connection that a failover moved can sit idle.
 */
const BLOCK_SECONDS = 10;
/** After an error other than the connection closing for good, before popping again. */
const RETRY_MS = 1_000;

/** The API's side of the replies: this process's id, and the news the workers send to it. */
export interface ImportReplies {
  /** the id the job data carries as `replyTo` */
  readonly replyTo: string;
  /** note: one handler (the process's ImportRunner); a later call replaces it */
  onReply(handler: (reply: ImportReply) => void): void;
}

/**
 * Takes the replies addressed to this API process (a list of its own, import-reply.ts) with a
 * blocking pop, in a loop. note: the replies are a shortcut; the
 * runner still hears the queue's events and polls, so a reply lost or late changes only when
 * the wait ends, never its outcome.
 */
export class ImportReplyListener implements ImportReplies {
  readonly replyTo = randomUUID();
  private handler: (reply: ImportReply) => void = () => undefined;
  private closed = false;
  private readonly key: string;
  /** note: a connection of its own, as a blocking pop holds it; created and closed here */
  private readonly redis: RedisClient;

  constructor(
    config: Pick<Config, 'redis' | 'redisPrefix'>,
    private readonly log: Logger,
  ) {
    this.key = importReplyKey(config.redisPrefix, this.replyTo);
    this.redis = createRedis(config, 'blocking');
    this.redis.on('error', (err: Error) => log.warn({ err: err.message }, 'redis connection error (import replies)'));
    void this.listen();
  }

  onReply(handler: (reply: ImportReply) => void): void {
    this.handler = handler;
  }

  private async listen(): Promise<void> {
    while (!this.closed) {
      let popped: [string, string] | null;
      try {
        popped = await this.redis.brpop(this.key, BLOCK_SECONDS);
      } catch (err) {
        if (this.closed) return;
        this.log.warn({ err }, 'could not take import replies; the queue events answer meanwhile');
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
        continue;
      }
      if (popped !== null && !this.closed) this.deliver(popped[1]);
    }
  }

  private deliver(raw: string): void {
    let parsed;
    try {
      parsed = ImportReplySchema.safeParse(JSON.parse(raw));
    } catch {
      parsed = undefined;
    }
    if (parsed?.success !== true) {
      this.log.warn('ignored a malformed import reply');
      return;
    }
    this.handler(parsed.data);
  }

  /** Stops taking replies and closes its connection; a reply sent later expires unread. */
  close(): Promise<void> {
    this.closed = true;
    // note: disconnecting rejects a pending BRPOP, which ends the loop. Not awaited: a cluster
    // client closed before it was ever ready leaves its queued BRPOP unsettled for good (it holds
    // no socket or timer then).
    this.redis.disconnect();
    return Promise.resolve();
  }
}

