import { Cluster } from 'ioredis';
import type { RedisClient } from '../infra/redis.js';

/**
 * How long a job's rows may wait for a worker. note: far beyond what a job can take (pickup
 * timeout, finish timeout, retries, a stalled job's second run); it only bounds what a crashed
 * process leaves behind, as the rows are deleted once their job is written or refused.
 */
export const ROWS_TTL_MS = 60 * 60_000;

/**
 * The rows of an import job wait in a Redis key of their own, next to the job rather than in
 * its data. note: in the data, BullMQ would JSON-encode ~200 KB of JSON a second time on add
 * (escaping every quote), decode it again on pickup, and keep it with every finished job.
 */
export class ImportRowsStore {
  /**
   * Whether Redis runs this store's commands and those of a queue on the same client in the order
   * they were sent. True on one connection (one server, or the master a sentinel names); false
   * on a cluster, whose client re-sends a redirected command (MOVED or ASK, during a failover or
   * a resharding) after commands sent later. Callers then wait for put() before adding the job.
   */
  readonly keepsSendOrder: boolean;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {
    this.keepsSendOrder = !(redis instanceof Cluster);
  }

  private key(importId: string): string {
    return `${this.prefix}:import-rows:${importId}`;
  }

  /** Stores the rows of a job: JSON text, or the bytes of `COPY` text (written as they are, never encoded again). */
  async put(importId: string, rows: string | Uint8Array): Promise<void> {
    const value = typeof rows === 'string' ? rows : Buffer.from(rows.buffer, rows.byteOffset, rows.byteLength);
    await this.redis.set(this.key(importId), value, 'PX', ROWS_TTL_MS);
  }

  /** The rows as text (JSON), or null when they are gone (written and deleted, withdrawn, or expired). */
  get(importId: string): Promise<string | null> {
    return this.redis.get(this.key(importId));
  }

  /** The rows as the bytes stored (`COPY` text, sent on to PostgreSQL as they are), or null when they are gone. */
  getBytes(importId: string): Promise<Buffer | null> {
    return this.redis.getBuffer(this.key(importId));
  }

  async delete(importId: string): Promise<void> {
    await this.redis.del(this.key(importId));
  }
}
