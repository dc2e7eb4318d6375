import postgres from 'postgres';
import type { Config } from './config.js';
import { connectWithNoDelay } from './db-socket.js';

const CONNECT_TIMEOUT_SEC = 2;

export type Sql = postgres.Sql;
export type TransactionSql = postgres.TransactionSql;

/** One pool per process. Query parameters are never logged (postgres.js keeps them out of errors' messages). */
export function createSql(config: Pick<Config, 'databaseUrl' | 'databasePoolMax'>, options: { max?: number } = {}): Sql {
  const settings: postgres.Options<Record<string, never>> & { socket: ReturnType<typeof connectWithNoDelay> } = {
    max: options.max ?? config.databasePoolMax,
    // note: a dead server must not hang a request for the OS TCP timeout.
    connect_timeout: CONNECT_TIMEOUT_SEC,
    // note: postgres.js supports a socket factory but does not declare it in its types.
    socket: connectWithNoDelay(CONNECT_TIMEOUT_SEC * 1000),
    idle_timeout: 60,
    onnotice: () => {},
    transform: { undefined: null },
  };
  return postgres(config.databaseUrl, settings);
}

/** Postgres error codes the service maps at the boundary. */
export const PG_UNIQUE_VIOLATION = '23505';
export const PG_DUPLICATE_DATABASE = '42P04';
