import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { bearer } from '../support/fixtures.js';
import { pgbouncerAvailable, startPgBouncer, type PgBouncer } from '../support/pgbouncer.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestService, type ApiReplica, type TestService } from '../support/test-service.js';

const NOT_DELIVERED = 'DATABASE_LISTEN_URL does not deliver notifications';

/**
 * Behind PgBouncer in transaction pooling mode (docs/contracts.md#topologies): DATABASE_URL through it with
 * prepare=false, DATABASE_LISTEN_URL straight to PostgreSQL. Each test starts PgBouncer itself,
 * whatever the run's own setting.
 */
describe.skipIf(!pgbouncerAvailable())('the API behind PgBouncer (transaction pooling)', () => {
  let pgbouncer: PgBouncer;
  const server = new URL(inject('postgresUrl'));

  beforeAll(async () => {
    pgbouncer = await startPgBouncer({ host: server.hostname, port: Number(server.port || 5432) });
  });
  afterAll(async () => {
    await pgbouncer?.stop();
  });

  const throughPgBouncer = (database: TestDatabase) => `${pgbouncer.urlFor(database.url)}?prepare=false`;

  describe('with DATABASE_LISTEN_URL straight to PostgreSQL', () => {
    let service: TestService;
    let replica: ApiReplica;

    beforeAll(async () => {
      const database = await createTestDatabase();
      service = await startTestService({
        worker: false,
        database,
        env: { DATABASE_URL: throughPgBouncer(database), DATABASE_LISTEN_URL: database.url },
      });
      replica = await service.startReplica();
    });
    afterAll(async () => {
      await replica?.close();
      await service?.close();
    });

    const onBoth = async (key: string) =>
      Promise.all([service, replica].map(async (api) => (await api.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key) })).statusCode));

    /** Polls both API processes every 50 ms for up to a second. */
    async function withinASecond(key: string, status: number): Promise<number> {
      const started = Date.now();
      for (let i = 0; i < 40 && Date.now() - started < 1_000; i += 1) {
        if ((await onBoth(key)).every((s) => s === status)) return Date.now() - started;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error(`both APIs did not answer ${status} within a second: ${JSON.stringify(await onBoth(key))}`);
    }

    it('goes through PgBouncer, and its listener proved at start that notifications arrive', async () => {
      expect(new URL(service.config.databaseUrl).port).toBe(String(pgbouncer.port));
      expect(await service.deps.authChanges.verified).toBe(true);
      expect(service.rawLogs()).not.toContain(NOT_DELIVERED);
    });

    it('applies a revocation made directly in the table on both API processes within a second', async () => {
      const account = await service.createAccount();
      const key = await service.createKey(account);
      expect(await onBoth(key)).toEqual([200, 200]);
      await service.sql`update api_keys set is_revoked = true, revoked_at = now() where account_id = ${account.id}`;
      expect(await withinASecond(key, 401)).toBeLessThan(1_000);
    });

    it('applies a tier change made directly in the table on both API processes within a second', async () => {
      const account = await service.createAccount({ tier: 'global' });
      const key = await service.createKey(account);
      expect(await onBoth(key)).toEqual([200, 200]);
      await service.sql`update accounts set subscription_tier = 'free' where id = ${account.id}`;
      expect(await withinASecond(key, 402)).toBeLessThan(1_000);
    });
  });

  it('reports at start a DATABASE_LISTEN_URL through transaction pooling, which accepts LISTEN and delivers nothing', async () => {
    const database = await createTestDatabase();
    const service = await startTestService({
      worker: false,
      database,
      env: { DATABASE_URL: throughPgBouncer(database), DATABASE_LISTEN_URL: throughPgBouncer(database) },
    });
    try {
      expect(await service.deps.authChanges.verified).toBe(false);
      const reported = service.logs.find((line) => String(line.msg).startsWith(NOT_DELIVERED));
      expect(reported?.level).toBe(50);
      expect(String(reported?.msg)).toContain('point DATABASE_LISTEN_URL at PostgreSQL itself or at a session-mode pool');
      // The API still serves requests; only direct table changes wait for the cache to expire.
      expect((await service.request({ method: 'GET', url: '/v1/health' })).statusCode).toBe(200);
    } finally {
      await service.close();
    }
  });
});
