import DataLoader from 'dataloader';
import type { RedisClient } from './redis.js';

/** At most this many keys in one MGET; more wait for the next. */
const MAX_KEYS_PER_READ = 500;

/**
 * GETs of single keys, sent together (DataLoader): every key asked for while the event loop
 * handles one round of I/O goes to Redis in one MGET once that round is over (setImmediate),
 * each key once. note: for what every API-key request reads, its IP's failures and the auth
 * version: the requests that arrive together share one command, one write and one reply instead
 * of one each (a partner's concurrent requests come from one IP and all read the one version).
 * A read is always sent after it was asked, never answered from an earlier reply (no cache), so
 * a request that arrives after a revocation committed reads the new version, as with a command
 * of its own. On a Redis Cluster the keys must share a slot (the prefix's hash tag does that).
 */
export class BatchedReads {
  private readonly loader: DataLoader<string, string | null>;

  constructor(redis: RedisClient) {
    this.loader = new DataLoader(
      async (keys) => {
        const unique = [...new Set(keys)];
        const values = await redis.mget(...unique);
        const byKey = new Map(unique.map((key, i) => [key, values[i] ?? null]));
        return keys.map((key) => byKey.get(key) ?? null);
      },
      { cache: false, maxBatchSize: MAX_KEYS_PER_READ, batchScheduleFn: (send) => setImmediate(send) },
    );
  }

  /** The key's value, or null; rejects when the MGET it went in failed. */
  get(key: string): Promise<string | null> {
    return this.loader.load(key);
  }
}
