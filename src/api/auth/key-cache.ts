import { LRUCache } from 'lru-cache';
import type { AuthenticatedKey } from '../../shared/repositories/api-keys.js';

export interface CachedKey {
  key: AuthenticatedKey;
  /** the AuthVersion read before the key was loaded from PostgreSQL */
  version: string;
}

/**
 * Active keys by hash, so a request whose key is cached touches Redis once and PostgreSQL not at
 * all. An entry is used only while the auth version it was loaded under is still current; the
 * TTL only bounds how long a change made behind the service's back (direct SQL) can go unseen.
 */
export function createKeyCache(): LRUCache<string, CachedKey> {
  return new LRUCache<string, CachedKey>({ max: 20_000, ttl: 30_000 });
}
