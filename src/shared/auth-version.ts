import type { Redis } from 'ioredis';

/**
 * A counter in Redis that every API replica reads on each API-key request, in the same round
 * trip as its limits. Whatever changes who may authenticate (a key revoked, a tier changed)
 * bumps it after its database write has committed, so every replica drops its cached keys
 * before the next request is answered.
 */
export class AuthVersion {
  /** read together with other keys (MGET) on the API-key hot path */
  readonly key: string;

  constructor(
    private readonly redis: Redis,
    redisPrefix: string,
  ) {
    this.key = `${redisPrefix}:auth-version`;
  }

  async current(): Promise<string> {
    return (await this.redis.get(this.key)) ?? '0';
  }

  async bump(): Promise<void> {
    await this.redis.incr(this.key);
  }
}
