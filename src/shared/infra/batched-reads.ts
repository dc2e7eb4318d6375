import type { RedisClient } from './redis.js';

/** At most this many keys in one MGET; more wait for the next. */
const MAX_KEYS_PER_READ = 500;

/** The reads asked for during one round of I/O: each key once, and who waits for which. */
interface Batch {
  keys: string[];
  positions: Map<string, number>;
  waiting: { at: number[]; resolve: (values: (string | null)[]) => void; reject: (error: unknown) => void }[];
}

/**
 * GETs of single keys, sent together: every key asked for while the event loop handles one round
 * of I/O goes to Redis in one MGET once that round is over (setImmediate), each key once. note:
 * for what an API-key request served from a share of its quota reads, its IP's failures and the
 * auth version: the requests that arrive together share one command, one write and one reply
 * instead of one each (a partner's concurrent requests come from one IP and all read the one
 * version). A read is always sent after it was asked, never answered from an earlier reply (no
 * cache), so a request that arrives after a revocation committed reads the new version, as with
 * a command of its own. On a Redis Cluster the keys must share a slot (the prefix's hash tag does
 * that). A request's keys are one wait (one promise), not one each: this is on every request's
 * path, where DataLoader's promise per key and its batch bookkeeping were measurable.
 */
export class BatchedReads {
  private batch: Batch | undefined;

  constructor(private readonly redis: RedisClient) {}

  /** The key's value, or null; rejects when the MGET it went in failed. */
  async get(key: string): Promise<string | null> {
    const [value] = await this.getAll([key]);
    return value ?? null;
  }

  /** The keys' values in their order, null for a missing one; rejects when their MGET failed. */
  getAll(keys: readonly string[]): Promise<(string | null)[]> {
    const batch = this.open();
    const at = keys.map((key) => {
      let position = batch.positions.get(key);
      if (position === undefined) {
        position = batch.keys.push(key) - 1;
        batch.positions.set(key, position);
      }
      return position;
    });
    // note: a full batch still goes when its round ends; the next reads start another
    if (batch.keys.length >= MAX_KEYS_PER_READ) this.batch = undefined;
    return new Promise((resolve, reject) => batch.waiting.push({ at, resolve, reject }));
  }

  private open(): Batch {
    if (this.batch !== undefined) return this.batch;
    const batch: Batch = { keys: [], positions: new Map(), waiting: [] };
    this.batch = batch;
    setImmediate(() => {
      if (this.batch === batch) this.batch = undefined;
      this.send(batch);
    });
    return batch;
  }

  private send({ keys, waiting }: Batch): void {
    this.redis.mget(...keys).then(
      (values) => {
        for (const { at, resolve } of waiting) resolve(at.map((position) => values[position] ?? null));
      },
      (error: unknown) => {
        for (const { reject } of waiting) reject(error);
      },
    );
  }
}
