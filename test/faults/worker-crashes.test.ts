import { afterEach, describe, expect, it } from 'vitest';
import { createFaultScenario, type FaultScenario } from '../support/fault-scenario.js';

describe('import jobs when a worker dies', () => {
  let scenario: FaultScenario | undefined;

  afterEach(async () => {
    await scenario?.close();
    scenario = undefined;
  });

  it('SIGKILL inside the transaction: another worker takes the job over, one 201, rows exactly once', async () => {
    scenario = await createFaultScenario();
    const api = await scenario.startApi();
    const doomed = await scenario.startWorker({ FAULT_INJECTION: 'pause-before-commit' });

    const reply = scenario.postListings(api.baseUrl, 7);
    await doomed.waitForOutput(/pausing inside the transaction/);
    await scenario.startWorker();
    await doomed.stop('SIGKILL');

    const { status, body } = await reply;
    // note: on failure, the reply and the processes' last lines say what happened.
    const story = () => [JSON.stringify(body), ...api.output.slice(-15), ...doomed.output.slice(-10)].join('\n');
    expect(status, story()).toBe(201);
    expect(body).toEqual({ inserted: 7, skipped: 0, errors: [] });
    expect(await scenario.countRows()).toEqual({ listings: 7, imports: 1 });
  });

  it('crash after commit, before acknowledgement: the job runs again, inserts nothing, replays the result', async () => {
    scenario = await createFaultScenario();
    const api = await scenario.startApi();
    const doomed = await scenario.startWorker({ FAULT_INJECTION: 'crash-after-commit' });

    const reply = scenario.postListings(api.baseUrl, 5);
    await doomed.exited;
    // The first run committed before it died.
    expect(await scenario.countRows()).toEqual({ listings: 5, imports: 1 });

    const survivor = await scenario.startWorker();
    const { status, body } = await reply;
    expect(status).toBe(201);
    expect(body).toEqual({ inserted: 5, skipped: 0, errors: [] });
    expect(await scenario.countRows()).toEqual({ listings: 5, imports: 1 });
    expect(survivor.output.some((line) => line.includes('import written'))).toBe(true);
  });

  it('no worker: 503 once the pickup timeout passes, and nothing is written when a worker starts later', async () => {
    scenario = await createFaultScenario({ IMPORT_PICKUP_TIMEOUT_MS: '1500' });
    const api = await scenario.startApi();

    const started = Date.now();
    const { status, body, headers } = await scenario.postListings(api.baseUrl, 3);
    expect(status).toBe(503);
    expect(body).toEqual({ error: 'Import workers unavailable; nothing was written', retry_after_sec: 30 });
    expect(headers.get('retry-after')).toBe('30');
    // A sanity bound, far from the 60 s import timeout, not a performance check.
    expect(Date.now() - started).toBeLessThan(15_000);

    const worker = await scenario.startWorker();
    // Give the late worker time to find anything left in the queue (it polls immediately on start).
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(await scenario.countRows()).toEqual({ listings: 0, imports: 0 });
    expect(worker.output.some((line) => line.includes('import written'))).toBe(false);
  });
});
