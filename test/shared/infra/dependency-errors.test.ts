import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSql, type Sql } from '../../../src/shared/infra/db.js';
import { isDependencyUnavailable } from '../../../src/shared/infra/dependency-errors.js';
import { createTestDatabase, type TestDatabase } from '../../support/test-database.js';

/** Which errors of PostgreSQL itself the API answers 503 (retry) rather than 500. */
describe('isDependencyUnavailable, with errors from a real PostgreSQL', () => {
  let database: TestDatabase;
  let sql: Sql;

  beforeAll(async () => {
    database = await createTestDatabase();
    sql = createSql({ databaseUrl: database.url, databasePoolMax: 2 });
  });
  afterAll(async () => {
    await sql?.end();
    await database?.drop();
  });

  it('counts a write that reached a read-only server (a standby, during a failover) as unavailable', async () => {
    const error = await sql
      .begin(async (tx) => {
        await tx`set transaction read only`;
        await tx`insert into accounts (display_name, subscription_tier) values ('read only', 'global')`;
      })
      .catch((e: unknown) => e);
    expect((error as { code?: string }).code).toBe('25006');
    expect(isDependencyUnavailable(error)).toBe(true);
  });

  it('does not count a bug (a syntax error) as unavailable', async () => {
    const error = await sql.unsafe('selec 1').catch((e: unknown) => e);
    expect((error as { code?: string }).code).toBe('42601');
    expect(isDependencyUnavailable(error)).toBe(false);
  });
});
