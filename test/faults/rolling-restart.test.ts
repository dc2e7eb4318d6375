import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createFaultScenario, type FaultScenario } from '../support/fault-scenario.js';
import type { ServiceProcess } from '../support/processes.js';

type Api = ServiceProcess & { baseUrl: string };

const RETRYABLE_STATUSES = new Set([503, 504]);

describe('graceful shutdown', () => {
  let scenario: FaultScenario | undefined;

  afterEach(async () => {
    await scenario?.close();
    scenario = undefined;
  });

  it('SIGTERM to an API finishes a request that is waiting on its job, then exits 0', async () => {
    scenario = await createFaultScenario({ IMPORT_PICKUP_TIMEOUT_MS: '30000' });
    const api = await scenario.startApi();
    const reply = scenario.postListings(api.baseUrl, 4);
    // The job waits in the queue: no worker yet.
    await new Promise((resolve) => setTimeout(resolve, 500));
    api.child.kill('SIGTERM');
    await api.waitForOutput(/api stopping/);
    await scenario.startWorker();
    expect(await reply).toMatchObject({ status: 201, body: { inserted: 4, skipped: 0 } });
    expect(await api.exited).toBe(0);
  });

  it('rolling restart of every API and worker under load loses nothing and writes nothing twice', async () => {
    scenario = await createFaultScenario({ IMPORT_PICKUP_TIMEOUT_MS: '15000' });
    const s = scenario;
    const apis: Api[] = [await s.startApi(), await s.startApi()];
    const workers = [await s.startWorker(), await s.startWorker()];
    const live = new Set(apis.map((api) => api.baseUrl));

    const statuses: number[] = [];
    let transportErrors = 0;
    let insertedTotal = 0;
    let logicalImports = 0;
    let stop = false;

    /** One partner loop: every import retried with its Idempotency-Key until it is in. */
    const client = async () => {
      while (!stop) {
        const key = randomUUID();
        const rows = 1 + Math.floor(Math.random() * 10);
        for (;;) {
          const baseUrl = [...live][Math.floor(Math.random() * live.size)];
          if (baseUrl === undefined) {
            await new Promise((resolve) => setTimeout(resolve, 50));
            continue;
          }
          try {
            const reply = await s.postListings(baseUrl, rows, { 'idempotency-key': key });
            statuses.push(reply.status);
            if (reply.status === 201) {
              insertedTotal += reply.body.inserted as number;
              logicalImports += 1;
              break;
            }
            expect(RETRYABLE_STATUSES.has(reply.status), JSON.stringify(reply.body)).toBe(true);
            expect(typeof reply.body.error).toBe('string');
          } catch (error) {
            if ((error as Error).name === 'AssertionError') throw error;
            // Connection refused or reset by a stopping API: nothing was accepted; try another.
            transportErrors += 1;
          }
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        // note: keeps the load under the account's 1,000 requests a minute.
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    };
    const clients = Array.from({ length: 4 }, () => client());

    const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    await pause(1_500);
    for (let i = 0; i < apis.length; i += 1) {
      const old = apis[i]!;
      live.delete(old.baseUrl);
      expect(await old.stop('SIGTERM')).toBe(0);
      const fresh = await s.startApi();
      apis[i] = fresh;
      live.add(fresh.baseUrl);
      await pause(1_000);
    }
    for (let i = 0; i < workers.length; i += 1) {
      expect(await workers[i]!.stop('SIGTERM')).toBe(0);
      workers[i] = await s.startWorker();
      await pause(1_000);
    }
    stop = true;
    await Promise.all(clients);

    const rows = await s.countRows();
    expect(logicalImports).toBeGreaterThan(10);
    expect(rows.imports).toBe(logicalImports);
    expect(rows.listings).toBe(insertedTotal);
    expect(statuses.filter((status) => status !== 201 && !RETRYABLE_STATUSES.has(status))).toEqual([]);
    // Reported for the reader of the test output; any number is acceptable.
    console.info(`rolling restart: ${logicalImports} imports, ${statuses.length} replies, ${transportErrors} refused connections`);
  });
});
