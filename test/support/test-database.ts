import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { inject } from 'vitest';
import { databaseUrl } from './services.js';

export interface TestDatabase {
  name: string;
  /** PostgreSQL itself */
  url: string;
  /**
   * What a service under test gets as DATABASE_URL: `url`, or the same database through
   * PgBouncer in transaction pooling mode (with `prepare=false`) on a TEST_PGBOUNCER=1 run.
   */
  serviceUrl: string;
  drop(): Promise<void>;
}

function adminSql() {
  return postgres(databaseUrl(inject('postgresUrl'), 'postgres'), { max: 1, onnotice: () => {} });
}

/** A fresh database cloned from the run's migrated template; drop() removes it. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `${inject('runId')}_${randomBytes(4).toString('hex')}`;
  const admin = adminSql();
  try {
    await admin.unsafe(`create database "${name}" template "${inject('templateDatabase')}"`);
  } finally {
    await admin.end();
  }
  return {
    name,
    url: databaseUrl(inject('postgresUrl'), name),
    serviceUrl: inject('pgbouncerUrl') === '' ? databaseUrl(inject('postgresUrl'), name) : `${databaseUrl(inject('pgbouncerUrl'), name)}?prepare=false`,
    async drop() {
      const cleanup = adminSql();
      try {
        await cleanup.unsafe(`drop database if exists "${name}" with (force)`);
      } finally {
        await cleanup.end();
      }
    },
  };
}

/**
 * A Redis prefix under the run's id, so the global teardown finds and deletes its keys; on a
 * cluster run it is a hash tag, `{<run id>-<hex>}`.
 */
export function testRedisPrefix(): string {
  const base = inject('redisPrefixBase');
  return `${base}-${randomBytes(4).toString('hex')}${base.startsWith('{') ? '}' : ''}`;
}
