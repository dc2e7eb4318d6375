import postgres from 'postgres';
import type { Config } from './config.js';

export type Sql = postgres.Sql;
export type TransactionSql = postgres.TransactionSql;

/** One pool per process. Query parameters are never logged (postgres.js keeps them out of errors' messages). */
export function createSql(config: Pick<Config, 'databaseUrl' | 'databasePoolMax'>, options: { max?: number } = {}): Sql {
  return postgres(config.databaseUrl, {
    max: options.max ?? config.databasePoolMax,
    // note: a dead server must not hang a request for the OS TCP timeout.
    connect_timeout: 2,
    idle_timeout: 60,
    onnotice: () => {},
    transform: { undefined: null },
  });
}

/** Postgres error codes the service maps at the boundary. */
export const PG_UNIQUE_VIOLATION = '23505';
export const PG_DUPLICATE_DATABASE = '42P04';
export const PG_INVALID_CATALOG_NAME = '3D000';
