import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/shared/infra/config.js';
import { createFaultScenario, type FaultScenario } from '../support/fault-scenario.js';

/**
 * With the default lock settings (WORKER_LOCK_DURATION_MS 10 s, stalled check every 5 s) and
 * another worker alive, the imports a killed worker held are taken over and answer 201.
 */
describe('a worker killed while it holds imports, default lock settings', () => {
  let scenario: FaultScenario | undefined;

  afterEach(async () => {
    await scenario?.close();
    scenario = undefined;
  });

  it('retakes every import it held within 15 s: each answers 201 with its rows written once', async () => {
    // note: the scenario's short test lock is replaced by the service's default; the API waits
    // 25 s for an import to finish, so an import retaken after 15 s plus this machine's slack
    // would be a 504.
    const defaults = loadConfig({});
    scenario = await createFaultScenario({ WORKER_LOCK_DURATION_MS: String(defaults.workerLockDurationMs), IMPORT_TIMEOUT_MS: '25000' });
    const api = await scenario.startApi();
    const doomed = await scenario.startWorker({ FAULT_INJECTION: 'pause-before-commit', WORKER_CONCURRENCY: '4' });

    const replies = Array.from({ length: 4 }, (_, i) => scenario!.postListings(api.baseUrl, i + 2));
    // The doomed worker holds all four, each paused inside its transaction.
    const deadline = Date.now() + 20_000;
    while (doomed.output.filter((line) => line.includes('pausing inside the transaction')).length < 4 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(doomed.output.filter((line) => line.includes('pausing inside the transaction'))).toHaveLength(4);
    await scenario.startWorker();
    const killedAt = Date.now();
    await doomed.stop('SIGKILL');

    const settled = await Promise.all(replies);
    const story = () => [JSON.stringify(settled.map((r) => [r.status, r.body])), ...api.output.slice(-10)].join('\n');
    expect(settled.map((r) => r.status), story()).toEqual([201, 201, 201, 201]);
    expect(settled.map((r) => r.body.inserted)).toEqual([2, 3, 4, 5]);
    expect(await scenario.countRows()).toEqual({ listings: 2 + 3 + 4 + 5, imports: 4 });
    console.log(`the killed worker's imports answered 201 ${Date.now() - killedAt} ms after the kill`);
  });
});
