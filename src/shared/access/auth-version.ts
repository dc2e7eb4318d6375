import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../infra/redis.js';

/**
 * A value in Redis that every API replica reads on each API-key request, in the same round trip
 * as its limits. Whatever changes who may authenticate (a key revoked, a tier changed) replaces
 * it after its database write has committed, so every replica drops its cached keys before the
 * next request is answered.
 *
 * note: a fresh random value, not a counter. A write lost in a failover would let a counter hand
 * out the same version twice, and a replica that cached a key under the first could keep
 * trusting it after the second change; a random value is never seen twice. The lost write
 * itself (the old value back after a failover) is covered by the API dropping its cache
 * whenever its Redis connection is re-established (deps.ts) and by the database's NOTIFY.
 */
export class AuthVersion {
  /** read together with other keys (MGET) on the API-key hot path; shares the prefix's hash tag */
  readonly key: string;

  constructor(
    private readonly redis: RedisClient,
    redisPrefix: string,
  ) {
    this.key = `${redisPrefix}:auth-version`;
  }

  async current(): Promise<string> {
    return (await this.redis.get(this.key)) ?? '0';
  }

  async bump(): Promise<void> {
    await this.redis.set(this.key, randomUUID());
  }
}
