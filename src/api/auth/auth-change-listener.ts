import type { Sql } from '../../shared/db.js';
import type { Logger } from '../../shared/logger.js';

/** The channel the triggers of migrations/0003 notify on. */
export const AUTH_CHANGE_CHANNEL = 'bulk_import_auth';
const RETRY_MS = 5_000;

/**
 * Clears the key cache when the database says a tier, a revocation or a key changed — also when
 * the change was made directly in the tables rather than through the service (which bumps the
 * auth version in Redis as well). Keeps trying to listen while PostgreSQL is away, so the API
 * can start without it; postgres.js re-listens by itself after a reconnect.
 */
export function listenForAuthChanges(sql: Sql, onChange: () => void, log: Logger): { stop(): Promise<void> } {
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  let attempt: Promise<{ unlisten(): Promise<void> } | undefined> = Promise.resolve(undefined);

  const start = () => {
    attempt = sql.listen(AUTH_CHANGE_CHANNEL, onChange, onChange).then(
      (listening) => listening,
      (err: unknown) => {
        if (!stopped) {
          log.warn({ err }, `could not listen on ${AUTH_CHANGE_CHANNEL}; retrying`);
          retry = setTimeout(start, RETRY_MS);
          retry.unref();
        }
        return undefined;
      },
    );
  };
  start();

  return {
    async stop() {
      stopped = true;
      clearTimeout(retry);
      // note: waits for an attempt still in flight, so nothing is left to unlisten after the
      // pool has ended.
      const listening = await attempt;
      await listening?.unlisten().catch(() => undefined);
    },
  };
}
