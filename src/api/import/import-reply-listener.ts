import type { Config } from '../../shared/infra/config.js';
import type { Logger } from '../../shared/infra/logger.js';
import { createRedis, type RedisClient } from '../../shared/infra/redis.js';
import { ImportReplySchema, importReplyChannel, type ImportReply } from '../../shared/import/import-reply.js';

/** The API's side of the replies: the news the workers send about the jobs they finish. */
export interface ImportReplies {
  /** note: one handler (the process's ImportRunner); a later call replaces it */
  onReply(handler: (reply: ImportReply) => void): void;
}

/**
 * Takes the workers' replies (the one channel of every API process, import-reply.ts) on a
 * subscriber connection of its own; ioredis subscribes again after a reconnect. note: the
 * replies are a shortcut; each waiting request also polls its job, so a reply lost (published
 * while this process was reconnecting) changes only when the wait ends, never its outcome.
 */
export class ImportReplyListener implements ImportReplies {
  private handler: (reply: ImportReply) => void = () => undefined;
  private readonly channel: string;
  /** note: a connection in subscriber mode serves nothing else; created and closed here */
  private readonly redis: RedisClient;
  /** resolves once subscribed (or refused: then only the poll answers) */
  readonly subscribed: Promise<void>;

  constructor(
    config: Pick<Config, 'redis' | 'redisPrefix'>,
    private readonly log: Logger,
  ) {
    this.channel = importReplyChannel(config.redisPrefix);
    this.redis = createRedis(config, 'blocking');
    this.redis.on('error', (err: Error) => log.warn({ err: err.message }, 'redis connection error (import replies)'));
    this.redis.on('message', (channel: string, message: string) => {
      if (channel === this.channel) this.deliver(message);
    });
    this.subscribed = this.redis.subscribe(this.channel).then(
      () => undefined,
      (err: unknown) => log.warn({ err }, 'could not subscribe to import replies; every import is answered by polling its job instead'),
    );
  }

  onReply(handler: (reply: ImportReply) => void): void {
    this.handler = handler;
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

  /** Stops taking replies and closes its connection; a reply sent later is lost, as intended. */
  close(): Promise<void> {
    this.redis.disconnect();
    return Promise.resolve();
  }
}
