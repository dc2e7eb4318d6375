import { afterAll, beforeAll, describe, it } from 'vitest';
import { expectFailoverSurvived, startStack, streamImportsThroughFailover, untilWritingTransaction, type Stack } from '../support/failover-stream.js';
import { patroniAvailable, startPatroniCluster, TTL_SEC, type PatroniCluster } from '../support/patroni.js';

/** every import in flight at the failover, or sent during it, ends 201 within this */
const FAILOVER_BUDGET_MS = 45_000;

/**
 * The same stream of imports as postgres-failover.test.ts, on a cluster that Patroni runs
 * (`synchronous_mode`, a leader lease of TTL_SEC): the leader's node dies whole, Patroni and
 * PostgreSQL, in the middle of an import's transaction, and Patroni promotes the synchronous
 * standby once the dead leader's lease has run out. Nobody tells the service anything: it has
 * both hosts in DATABASE_URL with `target_session_attrs=primary`.
 */
describe.skipIf(!patroniAvailable())(`Patroni failover: the leader's node dies, the synchronous standby takes over (ttl ${TTL_SEC} s)`, () => {
  let cluster: PatroniCluster | undefined;
  let stack: Stack | undefined;

  beforeAll(async () => {
    cluster = await startPatroniCluster();
    const hosts = cluster.nodes.map((node) => `127.0.0.1:${node.port}`).join(',');
    stack = await startStack(`postgres://postgres@${hosts}/bulk_import?target_session_attrs=primary`, 2);
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await cluster?.stop();
  });

  it('every import retried with its key ends 201 within 45 s, every row once on the new leader, no process restarted', async () => {
    const leader = await cluster!.waitForLeader();
    let next = leader;
    const stream = await streamImportsThroughFailover(stack!, async () => {
      await untilWritingTransaction(leader.url('bulk_import'));
      const diedAt = Date.now();
      await cluster!.kill(leader);
      next = await cluster!.waitForLeader({ except: leader, timeoutMs: 40_000 });
      return { diedAt, promotedAt: Date.now() };
    });
    await expectFailoverSurvived('Patroni failover', stack!, stream, next.url('bulk_import'), FAILOVER_BUDGET_MS);
  }, 150_000);
});
