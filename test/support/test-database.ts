import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { inject } from 'vitest';
import { databaseUrl } from './services.js';

export interface TestDatabase {
  name: string;
  url: string;
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

/** A Redis prefix under the run's id, so the global teardown finds and deletes its keys. */
export function testRedisPrefix(): string {
  return `${inject('runId')}-${randomBytes(4).toString('hex')}`;
}
