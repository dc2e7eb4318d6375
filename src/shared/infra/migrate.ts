import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Sql } from './db.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('../../../migrations/', import.meta.url));
// note: any constant works; it only has to be the same in every process that migrates.
const MIGRATION_LOCK_KEY = 727_411_001;

export interface MigrationResult {
  applied: string[];
}

/**
 * Applies the numbered SQL files in `migrations/` that are not yet recorded, in order, all in one
 * transaction. The transaction-scoped advisory lock makes a second process that migrates at the
 * same time wait, then find everything applied.
 */
export async function migrate(sql: Sql, dir: string = MIGRATIONS_DIR): Promise<MigrationResult> {
  const files = (await readdir(dir)).filter((f) => /^\d+_.+\.sql$/.test(f)).sort();
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`;
    await tx`
      create table if not exists schema_migrations (
        version text primary key,
        applied_at timestamptz not null default now()
      )`;
    const done = new Set((await tx<{ version: string }[]>`select version from schema_migrations`).map((r) => r.version));
    const applied: string[] = [];
    for (const file of files) {
      if (done.has(file)) continue;
      await tx.unsafe(await readFile(`${dir}/${file}`, 'utf8'));
      await tx`insert into schema_migrations (version) values (${file})`;
      applied.push(file);
    }
    return { applied };
  });
}
