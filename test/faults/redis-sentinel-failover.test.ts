import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/shared/access/api-key.js';
import { createKeyWithinCap } from '../../src/shared/repositories/api-keys.js';
import { signSessionToken } from '../../src/shared/access/session-token.js';
import { createFaultScenario, type FaultScenario } from '../support/fault-scenario.js';
import { validListing } from '../support/fixtures.js';
import type { ApiProcess, ServiceProcess } from '../support/processes.js';
import { redisServerAvailable, startRedisSentinelGroup, type RedisSentinelGroup } from '../support/redis-servers.js';
import { tally } from '../support/tally.js';
import { TEST_SESSION_SECRET } from '../support/test-service.js';

/** the services' own limits, set in the scenario's env */
const IMPORT_PICKUP_TIMEOUT_MS = 10_000;
const IMPORT_TIMEOUT_MS = 15_000;
/**
 * Every attempt is answered within this, failover or not: a worker's pickup, the import's run,
 * and the few seconds of Redis commands that time out (2 s each) and of the import's record.
 */
const ANSWER_WITHIN_MS = IMPORT_PICKUP_TIMEOUT_MS + IMPORT_TIMEOUT_MS + 8_000;

/** imports sent before the switch starts, and at least as many after it has completed */
const IMPORTS_AROUND_SWITCH = 6;
const MAX_IMPORTS = 150;
const ROWS_PER_IMPORT = 3;
const STREAM_CONCURRENCY = 3;
const MAX_ATTEMPTS = 40;

interface StreamReport {
  /** the Idempotency-Keys of the imports sent */
  keys: string[];
  /** every status any attempt got, in order */
  statuses: number[];
  /** attempts that got neither 201 nor 503/504 */
  unexpected: string[];
  /** imports that never reached 201 */
  unfinished: string[];
  /** the longest any attempt waited for its answer, in ms */
  longestAnswerMs: number;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Sends listings imports, each with an Idempotency-Key of its own and rows whose titles name
 * that key, and retries each with its key (on the other API) until it is 201. Calls `switchOver`
 * after a few imports and goes on until a few more were sent after it had completed.
 */
async function importStream(apis: ApiProcess[], apiKey: string, tag: string, switchOver: () => Promise<void>): Promise<StreamReport> {
  const report: StreamReport = { keys: [], statuses: [], unexpected: [], unfinished: [], longestAnswerMs: 0 };
  let switching: Promise<void> | undefined;
  let sentAfterSwitch = -1;
  const one = async (key: string) => {
    const body = JSON.stringify({ listings: Array.from({ length: ROWS_PER_IMPORT }, (_, i) => validListing({ title: `${key} row ${i}` })) });
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      const api = apis[(report.keys.indexOf(key) + attempt) % apis.length]!;
      let status: number;
      const sent = Date.now();
      try {
        const res = await fetch(`${api.baseUrl}/v1/api/listings/bulk`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'idempotency-key': key },
          body,
          signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
        });
        status = res.status;
        await res.arrayBuffer();
      } catch (error) {
        report.unexpected.push(`${key}: ${(error as Error).message} after ${Date.now() - sent} ms`);
        return;
      } finally {
        report.longestAnswerMs = Math.max(report.longestAnswerMs, Date.now() - sent);
      }
      report.statuses.push(status);
      if (status === 201) return;
      if (status !== 503 && status !== 504) {
        report.unexpected.push(`${key}: ${status}`);
        return;
      }
      await pause(500);
    }
    report.unfinished.push(key);
  };
  const more = () => sentAfterSwitch < IMPORTS_AROUND_SWITCH && report.keys.length < MAX_IMPORTS;
  const lanes = Array.from({ length: STREAM_CONCURRENCY }, async () => {
    while (more()) {
      const key = `${tag}-${report.keys.length}`;
      report.keys.push(key);
      if (sentAfterSwitch >= 0) sentAfterSwitch += 1;
      if (report.keys.length === IMPORTS_AROUND_SWITCH) {
        switching = switchOver().then(() => {
          sentAfterSwitch = 0;
        });
      }
      await one(key);
      // note: imports keep flowing while the switch takes its time, a few a second.
      if (switching && sentAfterSwitch < 0) await pause(100);
    }
  });
  await Promise.all(lanes);
  await switching;
  return report;
}

async function eventually(what: string, probe: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; i < 200 && Date.now() < deadline; i += 1) {
    if (await probe().catch(() => false)) return;
    await pause(250);
  }
  throw new Error(`${what} within ${timeoutMs} ms`);
}

/**
 * A master, a replica and a sentinel, with two API processes and two workers configured by
 * REDIS_SENTINELS alone. The master is switched while imports stream in: every import, retried
 * with its key, ends 201 with its rows exactly once, and nobody restarts anything. Each test has
 * a group and processes of its own.
 */
describe.skipIf(!redisServerAvailable())('Redis Sentinel failover during a stream of imports', () => {
  let group: RedisSentinelGroup | undefined;
  let scenario: FaultScenario | undefined;

  afterEach(async () => {
    await scenario?.close();
    await group?.stop();
    scenario = undefined;
    group = undefined;
  });

  async function startStack() {
    group = await startRedisSentinelGroup();
    scenario = await createFaultScenario({
      REDIS_SENTINELS: `127.0.0.1:${group.sentinel.port}`,
      REDIS_SENTINEL_NAME: group.name,
      IMPORT_PICKUP_TIMEOUT_MS: String(IMPORT_PICKUP_TIMEOUT_MS),
      IMPORT_TIMEOUT_MS: String(IMPORT_TIMEOUT_MS),
    });
    const apis = [await scenario.startApi(), await scenario.startApi()];
    const workers = [await scenario.startWorker(), await scenario.startWorker()];
    return { group, scenario, apis, workers };
  }

  async function expectExactlyOnce(scenario: FaultScenario, tag: string, report: StreamReport): Promise<void> {
    expect(report.unexpected, `attempts that got another answer: ${report.unexpected.join(', ')}`).toEqual([]);
    expect(report.unfinished).toEqual([]);
    const rows = await scenario.sql<{ key: string; n: number }[]>`
      select split_part(title, ' row ', 1) as key, count(*)::int as n from listings
      where title like ${`${tag}-%`} group by 1`;
    expect(rows).toHaveLength(report.keys.length);
    expect(rows.filter((r) => r.n !== ROWS_PER_IMPORT)).toEqual([]);
  }

  async function expectRecovered(scenario: FaultScenario, apis: ApiProcess[], workers: ServiceProcess[]): Promise<void> {
    for (const api of apis) {
      await eventually(`${api.baseUrl} health did not return to 200`, async () => (await fetch(`${api.baseUrl}/v1/health`)).status === 200);
    }
    for (const process of [...apis, ...workers]) expect(process.child.exitCode, `${process.part} exited`).toBeNull();
    // A fresh import goes through on each API without a restart. note: within a bound, as health
    // is: once health reads 200 an import can still meet the queue's connections reconnecting,
    // answered 503 with nothing written (one full run in two of the fault suite met it here).
    for (const api of apis) await eventually(`${api.baseUrl} took no fresh import`, async () => (await scenario.postListings(api.baseUrl, 1)).status === 201);
  }

  const me = (api: ApiProcess, key: string) =>
    fetch(`${api.baseUrl}/v1/api/me`, { headers: { authorization: `Bearer ${key}` } }).then((res) => res.status);

  it('SENTINEL FAILOVER: 201, 503 or 504 during the switch, every import once, a key revoked just before stays revoked', async () => {
    const { group, scenario, apis, workers } = await startStack();
    // A second key, cached by both APIs, then revoked just before the switch.
    const second = generateApiKey();
    const created = await createKeyWithinCap(scenario.sql, {
      accountId: scenario.accountId,
      label: 'revoked before failover',
      scopes: ['listings:write'],
      keyPrefix: second.prefix,
      keyHash: second.hash,
    });
    if (created === 'cap-reached') throw new Error('the account already has 20 keys');
    for (const api of apis) expect(await me(api, second.fullKey)).toBe(200);
    const sessionToken = await signSessionToken(scenario.accountId, TEST_SESSION_SECRET, 3600);
    const revoke = await fetch(`${apis[0]!.baseUrl}/v1/api/keys/${created.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${sessionToken}` },
    });
    expect(revoke.status).toBe(200);

    const oldMaster = await group.currentMasterPort();
    const tag = `failover-${randomUUID().slice(0, 8)}`;
    const report = await importStream(apis, scenario.apiKey, tag, async () => {
      const sentinel = group.sentinel.client();
      try {
        expect(await sentinel.call('SENTINEL', 'FAILOVER', group.name)).toBe('OK');
      } finally {
        sentinel.disconnect();
      }
      await group.waitForNewMaster(oldMaster);
    });
    console.log(`SENTINEL FAILOVER: ${report.keys.length} imports, statuses ${tally(report.statuses)}, longest answer ${report.longestAnswerMs} ms`);

    expect(await group.currentMasterPort()).not.toBe(oldMaster);
    await expectExactlyOnce(scenario, tag, report);
    await expectRecovered(scenario, apis, workers);
    for (const api of apis) expect(await me(api, second.fullKey)).toBe(401);
  });

  it('a master that stops answering: the sentinel promotes the replica, every import once, all recover', async () => {
    const { group, scenario, apis, workers } = await startStack();
    const tag = `frozen-${randomUUID().slice(0, 8)}`;
    try {
      const report = await importStream(apis, scenario.apiKey, tag, async () => {
        group.master.freeze();
        await group.waitForNewMaster(group.master.port, 30_000);
      });
      console.log(`master frozen: ${report.keys.length} imports, statuses ${tally(report.statuses)}, longest answer ${report.longestAnswerMs} ms`);
      expect(await group.currentMasterPort()).toBe(group.replica.port);
      await expectExactlyOnce(scenario, tag, report);
      await expectRecovered(scenario, apis, workers);
    } finally {
      group.master.thaw();
    }
  });
});
