import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { expectFailoverSurvived, postListings, startStack, streamImportsThroughFailover, untilWritingTransaction, type Stack } from '../support/failover-stream.js';
import { validListing } from '../support/fixtures.js';
import { postgresServersAvailable, startPrimaryAndStandby, type PrimaryAndStandby } from '../support/postgres-servers.js';
import { databaseUrl } from '../support/services.js';

/** Nothing listens on port 1 (see db-socket.test.ts), so a host there is dead. */
const DEAD_HOST = '127.0.0.1:1';
/**
 * Between the primary's death and the promotion: what a failover manager takes to notice (a few
 * seconds here; Patroni's ttl, 30 s by default, in production).
 */
const PROMOTION_DELAY_MS = 2_000;
/** every import in flight at the failover, or sent during it, ends 201 within this */
const FAILOVER_BUDGET_MS = 45_000;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a multi-host DATABASE_URL whose first host is dead', () => {
  const server = new URL(inject('postgresUrl'));
  const database = `${inject('runId')}_multihost_${randomBytes(3).toString('hex')}`;
  let stack: Stack | undefined;

  afterAll(async () => {
    await stack?.stop();
    const admin = postgres(databaseUrl(inject('postgresUrl'), 'postgres'), { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists "${database}" with (force)`);
    await admin.end();
  });

  it('npm run migrate creates and migrates the database, the admin CLI, the API and a worker run on it, and an import answers 201', async () => {
    const url = `postgres://${server.username || 'postgres'}${server.password ? `:${server.password}` : ''}@${DEAD_HOST},${server.host}/${database}`;
    stack = await startStack(url, 1);
    const api = stack.apis[0]!;
    expect((await fetch(`${api.baseUrl}/v1/health`)).status).toBe(200);
    const res = await postListings(api, stack.apiKey, [validListing({ title: 'multi-host row' })]);
    expect(res.status).toBe(201);
    const check = postgres(databaseUrl(inject('postgresUrl'), database), { max: 1, onnotice: () => {} });
    try {
      expect(await check`select title from listings`).toEqual([{ title: 'multi-host row' }]);
    } finally {
      await check.end();
    }
  }, 90_000);
});

/**
 * The primary dies (`pg_ctl stop -m immediate`) in the middle of an import's transaction and its
 * synchronous standby is promoted (`pg_ctl promote`) PROMOTION_DELAY_MS later, while several
 * clients stream imports. The service's processes are configured with both hosts and
 * `target_session_attrs=primary`, and nobody restarts them.
 */
describe.skipIf(!postgresServersAvailable())('PostgreSQL failover: the primary dies and its synchronous standby is promoted', () => {
  let servers: PrimaryAndStandby | undefined;
  let stack: Stack | undefined;

  beforeAll(async () => {
    servers = await startPrimaryAndStandby({ synchronous: true });
    const { primary, standby } = servers;
    stack = await startStack(`postgres://postgres@127.0.0.1:${primary.port},127.0.0.1:${standby.port}/bulk_import?target_session_attrs=primary`, 2);
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await servers?.stop();
  });

  it('every import retried with its key ends 201 within 45 s, every row once on the promoted server, no process restarted', async () => {
    const { primary, standby } = servers!;
    const stream = await streamImportsThroughFailover(stack!, async () => {
      await untilWritingTransaction(primary.url('bulk_import'));
      const diedAt = Date.now();
      await servers!.kill(primary);
      await pause(PROMOTION_DELAY_MS);
      servers!.promote(standby);
      return { diedAt, promotedAt: Date.now() };
    });
    await expectFailoverSurvived('PostgreSQL failover', stack!, stream, standby.url('bulk_import'), FAILOVER_BUDGET_MS);
  }, 150_000);
});
