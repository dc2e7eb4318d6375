import type { Logger } from '../../shared/infra/logger.js';
import type { Sql } from '../../shared/infra/db.js';
import { touchKeysLastUsed } from '../../shared/repositories/api-keys.js';

/** How long a key's use waits to be written with the others'. */
export const KEY_USE_FLUSH_MS = 1_000;

/**
 * Writes the keys' `last_used_at` (docs/access.md#api-keys) in batches: the keys used since the
 * last write, in one statement a second at most. note: one UPDATE per key (each key once a minute
 * per replica) was a PostgreSQL round trip for one request in twelve of `npm run bench`'s
 * `GET /v1/api/me` (1,200 keys, 15,000 requests a round), CPU in the API and in PostgreSQL on
 * the same cores. Never on the request's path: a slow or failed write delays and fails nothing.
 */
export class KeyUseRecorder {
  private pending = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly log: Logger,
  ) {}

  /** The key was used now; it is written within KEY_USE_FLUSH_MS. */
  record(keyId: string): void {
    this.pending.add(keyId);
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => void this.flush(), KEY_USE_FLUSH_MS);
    // note: a pending write never keeps a stopping process alive; close() writes it.
    this.timer.unref();
  }

  /** Writes the uses recorded so far. Never throws: a failed write is logged and dropped. */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.size === 0) return;
    const keyIds = [...this.pending];
    this.pending = new Set();
    try {
      await touchKeysLastUsed(this.sql, keyIds);
    } catch (err) {
      this.log.warn({ err, keys: keyIds.length }, 'could not record key use');
    }
  }

  /** On shutdown, before the database pool closes: writes what is pending. */
  close(): Promise<void> {
    return this.flush();
  }
}
