import { parseDatabaseUrl, withDatabase } from './database-url.js';
import { createSql, PG_DUPLICATE_DATABASE, PG_UNIQUE_VIOLATION } from './db.js';

/**
 * Creates the database named in the URL when it does not exist and the server allows it
 * (docs/contracts.md#scripts). Connects to the server's `postgres` database to do so, through
 * the same hosts and `target_session_attrs` as the service, so with several hosts it creates the
 * database on the primary.
 */
export async function ensureDatabase(databaseUrl: string): Promise<{ created: boolean }> {
  const name = parseDatabaseUrl(databaseUrl).database;
  if (name === '' || name === 'postgres') return { created: false };
  const admin = createSql({ databaseUrl: withDatabase(databaseUrl, 'postgres'), databasePoolMax: 1 });
  try {
    const [row] = await admin`select 1 as found from pg_database where datname = ${name}`;
    if (row) return { created: false };
    try {
      await admin.unsafe(`create database "${name.replaceAll('"', '""')}"`);
      return { created: true };
    } catch (error) {
      // note: two processes starting together may both try; the loser finds it created. Postgres
      // reports that as 42P04 or, when both inserts race in the catalog, as 23505.
      const code = (error as { code?: string }).code;
      if (code === PG_DUPLICATE_DATABASE || code === PG_UNIQUE_VIOLATION) return { created: false };
      throw error;
    }
  } finally {
    await admin.end({ timeout: 5 });
  }
}
