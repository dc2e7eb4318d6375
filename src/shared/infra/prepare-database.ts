import type { Config } from './config.js';
import { createSql } from './db.js';
import { ensureDatabase } from './ensure-database.js';
import type { Logger } from './logger.js';
import { migrate } from './migrate.js';

/** Creates the database if missing, then applies pending migrations. */
export async function prepareDatabase(config: Config, log: Logger): Promise<void> {
  const { created } = await ensureDatabase(config.databaseUrl);
  if (created) log.info('database created');
  const sql = createSql(config, { max: 1 });
  try {
    const { applied } = await migrate(sql);
    log.info({ applied }, applied.length > 0 ? 'migrations applied' : 'database schema is up to date');
  } finally {
    await sql.end({ timeout: 5 });
  }
}
