import { LRUCache } from 'lru-cache';
import type { AuthenticatedKey } from '../../shared/repositories/api-keys.js';

export interface CachedKey {
  key: AuthenticatedKey;
  /** the AuthVersion read before the key was loaded from PostgreSQL */
  version: string;
}

/**
 * Active keys by hash, so a request whose key is cached touches Redis once and PostgreSQL not at
 * all. An entry is used only while the auth version it was loaded under is still current, and
 * the whole cache is dropped when the database notifies a change (see auth-change-listener.ts).
 * The TTL only bounds how long a change that reached neither can go unseen. note: an entry
 * carries the key's end and allowed addresses (api-key-auth.ts checks them on every request), so
 * a key ends on the dot on every replica without a reload; a roll or a change of addresses bumps
 * the version as a revocation does.
 */
export class KeyCache {
  private readonly entries = new LRUCache<string, CachedKey>({ max: 20_000, ttl: 30_000 });
  /** bumped by every clear(), so a load that raced a clear is not cached */
  private generation = 0;

  get(hash: string): CachedKey | undefined {
    return this.entries.get(hash);
  }

  delete(hash: string): void {
    this.entries.delete(hash);
  }

  /** Call before loading from PostgreSQL; pass the result to set(). */
  startLoad(): number {
    return this.generation;
  }

  set(hash: string, entry: CachedKey, loadStartedAt: number): void {
    if (loadStartedAt === this.generation) this.entries.set(hash, entry);
  }

  clear(): void {
    this.generation += 1;
    this.entries.clear();
  }
}
