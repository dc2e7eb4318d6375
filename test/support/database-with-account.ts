import { createSql, type Sql } from '../../src/shared/infra/db.js';
import { createTestDatabase } from './test-database.js';

/** A pool on a fresh database that holds one account; `close()` ends the pool and drops the database. */
export interface DatabaseWithAccount {
  sql: Sql;
  accountId: string;
  close(): Promise<void>;
}

/**
 * Where the tests of the worker's own writes start, without an API: a fresh database
 * (createTestDatabase), a pool of `poolMax` connections on it and one account of the global tier.
 */
export async function openDatabaseWithAccount(accountName: string, poolMax = 4): Promise<DatabaseWithAccount> {
  const database = await createTestDatabase();
  const sql = createSql({ databaseUrl: database.url, databasePoolMax: poolMax });
  const close = async () => {
    await sql.end();
    await database.drop();
  };
  try {
    return { sql, accountId: await insertAccount(sql, accountName), close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** A new account of the global tier, written straight into the table; returns its id. */
async function insertAccount(sql: Sql, displayName: string): Promise<string> {
  const [account] = await sql<{ id: string }[]>`
    insert into accounts (display_name, subscription_tier) values (${displayName}, 'global') returning id`;
  return account!.id;
}
