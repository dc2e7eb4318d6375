import { randomUUID } from 'node:crypto';
import type { Sql } from '../../shared/infra/db.js';
import type { Logger } from '../../shared/infra/logger.js';

/** The channel the triggers of migrations/0003 notify on. */
export const AUTH_CHANGE_CHANNEL = 'bulk_import_auth';
const RETRY_MS = 5_000;
/** How long the start-up probe waits for its own notification to come back. */
export const PROBE_TIMEOUT_MS = 2_000;

export interface AuthChangeListener {
  /** resolves true once a probe came back, false when it did not (reported in the log) */
  readonly verified: Promise<boolean>;
  stop(): Promise<void>;
}

/**
 * Clears the key cache when the database says a tier, a revocation or a key changed — also when
 * the change was made directly in the tables rather than through the service (which bumps the
 * auth version in Redis as well). `sql` is the pool of DATABASE_LISTEN_URL: LISTEN needs a
 * session of its own, which a transaction-pooling PgBouncer does not keep, so operators point it
 * at PostgreSQL itself or at a session-mode pool.
 *
 * Keeps trying to listen while PostgreSQL is away, so the API can start without it; postgres.js
 * re-listens by itself after a reconnect. Once listening, it sends itself a notification and
 * logs an error naming DATABASE_LISTEN_URL when it does not come back: through transaction
 * pooling LISTEN succeeds and then delivers nothing, which would otherwise go unnoticed, and
 * changes made in the tables would wait for the cache's 30 s expiry.
 */
export function listenForAuthChanges(sql: Sql, onChange: () => void, log: Logger): AuthChangeListener {
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  let probe: { token: string; arrived(): void } | undefined;
  let attempt: Promise<{ unlisten(): Promise<void> } | undefined> = Promise.resolve(undefined);
  let settleVerified: (ok: boolean) => void = () => undefined;
  const verified = new Promise<boolean>((resolve) => {
    settleVerified = resolve;
  });

  const onNotification = (payload: string) => {
    if (probe !== undefined && payload === probe.token) probe.arrived();
    else onChange();
  };

  const verifyDelivery = async () => {
    const token = `probe:${randomUUID()}`;
    const arrived = new Promise<boolean>((resolve) => {
      probe = { token, arrived: () => resolve(true) };
      setTimeout(() => resolve(false), PROBE_TIMEOUT_MS).unref();
    });
    try {
      await sql.notify(AUTH_CHANGE_CHANNEL, token);
    } catch (err) {
      log.warn({ err }, `could not send a probe notification on ${AUTH_CHANGE_CHANNEL}`);
    }
    const ok = await arrived;
    probe = undefined;
    if (ok) log.info(`listening on ${AUTH_CHANGE_CHANNEL}: changes made in the tables reach the key cache at once`);
    else if (!stopped) {
      log.error(
        `DATABASE_LISTEN_URL does not deliver notifications: a probe on ${AUTH_CHANGE_CHANNEL} did not come back within ` +
          `${PROBE_TIMEOUT_MS} ms. A transaction-pooling PgBouncer accepts LISTEN and then delivers nothing; point ` +
          'DATABASE_LISTEN_URL at PostgreSQL itself or at a session-mode pool. Until then a revocation or tier change made ' +
          'directly in the tables takes up to 30 s to apply (changes made through the service still apply at once).',
      );
    }
    settleVerified(ok);
  };

  const start = () => {
    attempt = sql.listen(AUTH_CHANGE_CHANNEL, onNotification, onChange).then(
      (listening) => {
        void verifyDelivery();
        return listening;
      },
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
    verified,
    async stop() {
      stopped = true;
      clearTimeout(retry);
      settleVerified(false);
      // note: waits for an attempt still in flight, so nothing is left to unlisten after the
      // pool has ended.
      const listening = await attempt;
      await listening?.unlisten().catch(() => undefined);
    },
  };
}
