import postgres from 'postgres';
import { inject } from 'vitest';
import type { Sql } from '../../src/shared/infra/db.js';
import { databaseUrl } from './services.js';

/**
 * A pool of one connection on the database of `sql` that lists the text of every statement it
 * sends (`sent`), to tell which statements a write took; `end()` closes it. note: the connection's
 * own first queries (its types) are sent before and not listed.
 */
export async function statementLoggingPool(sql: Sql): Promise<{ sql: Sql; sent: string[] }> {
  const sent: string[] = [];
  const url = databaseUrl(inject('postgresUrl'), sql.options.database);
  const logging = postgres(url, { max: 1, onnotice: () => {}, transform: { undefined: null }, debug: (_connection, query) => sent.push(query) });
  await logging`select 1`;
  sent.length = 0;
  return { sql: logging as unknown as Sql, sent };
}
