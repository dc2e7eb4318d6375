import postgres from 'postgres';
import type { Config } from './config.js';
import { parseDatabaseUrl } from './database-url.js';
import { connectWithNoDelay } from './db-socket.js';

const CONNECT_TIMEOUT_SEC = 2;

export type Sql = postgres.Sql;
export type TransactionSql = postgres.TransactionSql;

/** One pool per process. Query parameters are never logged (postgres.js keeps them out of errors' messages). */
export function createSql(config: Pick<Config, 'databaseUrl' | 'databasePoolMax'>, options: { max?: number } = {}): Sql {
  const { hosts } = parseDatabaseUrl(config.databaseUrl);
  const settings: Settings = {
    // note: the hosts as read here, not as postgres.js reads them: it splits each `host:port` at
    // its first colon, which turns `[::1]:5432` into the host `[`.
    host: hosts.map((h) => h.host),
    port: hosts.map((h) => h.port),
    max: options.max ?? config.databasePoolMax,
    // note: a dead server must not hang a request for the OS TCP timeout.
    connect_timeout: CONNECT_TIMEOUT_SEC,
    socket: connectWithNoDelay(CONNECT_TIMEOUT_SEC * 1000),
    idle_timeout: 60,
    onnotice: () => {},
    transform: { undefined: null },
  };
  return postgres(config.databaseUrl, settings as unknown as postgres.Options<Record<string, never>>);
}

/**
 * note: postgres.js takes lists of hosts and ports and a socket factory, though its Options type
 * declares one host, one port and no factory.
 */
type Settings = Omit<postgres.Options<Record<string, never>>, 'host' | 'port'> & {
  host: string[];
  port: number[];
  socket: ReturnType<typeof connectWithNoDelay>;
};

/** Postgres error codes the service maps at the boundary. */
export const PG_UNIQUE_VIOLATION = '23505';
export const PG_DUPLICATE_DATABASE = '42P04';
