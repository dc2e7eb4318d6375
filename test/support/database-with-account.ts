import { afterAll, beforeAll } from 'vitest';
import { createSql, type Sql } from '../../src/shared/infra/db.js';
import { createTestDatabase } from './test-database.js';

/** A pool on a fresh database; `close()` ends the pool and drops the database. */
export interface TestPool {
  sql: Sql;
  close: () => Promise<void>;
}

/** A pool on a fresh database that holds one account. */
export interface DatabaseWithAccount extends TestPool {
  accountId: string;
}

/** A fresh database (createTestDatabase) and a pool of `poolMax` connections on it. */
export async function openTestPool(poolMax = 4): Promise<TestPool> {
  const database = await createTestDatabase();
  const sql = createSql({ databaseUrl: database.url, databasePoolMax: poolMax });
  const close = async () => {
    await sql.end();
    await database.drop();
  };
  return { sql, close };
}

/** A TestPool opened before the suite's tests and closed after them; its `sql` is read inside the tests. */
export function useTestPool(poolMax?: number): { readonly sql: Sql } {
  let pool: TestPool | undefined;
  beforeAll(async () => {
    pool = await openTestPool(poolMax);
  });
  afterAll(async () => {
    await pool?.close();
  });
  return {
    get sql(): Sql {
      if (pool === undefined) throw new Error('the pool is opened before the tests, and read only inside them');
      return pool.sql;
    },
  };
}

/**
 * Where the tests of the worker's own writes start, without an API: a fresh database
 * (openTestPool), a pool of `poolMax` connections on it and one account of the global tier.
 */
export async function openDatabaseWithAccount(accountName: string, poolMax = 4): Promise<DatabaseWithAccount> {
  const { sql, close } = await openTestPool(poolMax);
  try {
    return { sql, accountId: await insertAccount(sql, accountName), close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** A new account of the global tier, written straight into the table; returns its id. */
export async function insertAccount(sql: Sql, displayName: string, avatarUrl: string | null = null): Promise<string> {
  const [account] = await sql<{ id: string }[]>`
    insert into accounts (display_name, subscription_tier, avatar_url) values (${displayName}, 'global', ${avatarUrl}) returning id`;
  return account!.id;
}
