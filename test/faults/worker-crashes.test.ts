import { afterEach, describe, expect, it } from 'vitest';
import { createFaultScenario, type FaultScenario } from '../support/fault-scenario.js';
import { validListing } from '../support/fixtures.js';
import type { ServiceProcess } from '../support/processes.js';

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
    expect(body).toEqual({ inserted: 7, skipped: 0, errors: [], import_id: expect.any(String) });
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
    expect(body).toEqual({ inserted: 5, skipped: 0, errors: [], import_id: expect.any(String) });
    expect(await scenario.countRows()).toEqual({ listings: 5, imports: 1 });
    expect(survivor.output.some((line) => line.includes('import written'))).toBe(true);
  });

  it('a job that ends failed after its commit (its workers die after every commit, past the stalled limit): 201 with its result, and its Idempotency-Key writes nothing again', async () => {
    scenario = await createFaultScenario();
    const api = await scenario.startApi();
    const body = JSON.stringify({ listings: Array.from({ length: 3 }, () => validListing()) });
    const post = () =>
      fetch(`${api.baseUrl}/v1/api/listings/bulk`, {
        method: 'POST',
        headers: { authorization: `Bearer ${scenario!.apiKey}`, 'content-type': 'application/json', 'idempotency-key': 'dies-after-commit' },
        body,
      }).then(async (res) => ({ status: res.status, body: (await res.json()) as unknown }));

    const first = post();
    let answered = false;
    void first.then(() => (answered = true));
    let rejoined: ReturnType<typeof post> | undefined;
    const workers: ServiceProcess[] = [];
    // Each worker commits (or finds the commit) and dies before acknowledging; after the third
    // stall the next worker's check fails the job. Bounded: at most six workers.
    for (let i = 0; i < 6 && !answered; i += 1) {
      const doomed = await scenario.startWorker({ FAULT_INJECTION: 'crash-after-commit' });
      workers.push(doomed);
      await Promise.race([doomed.exited, first]);
      // A retry that comes while the first request still waits joins the same job.
      rejoined ??= post();
    }
    const story = () => [...api.output.slice(-20), ...workers.flatMap((w) => w.output.slice(-5))].join('\n');
    // the request, the retry that rejoined its job and a later retry all name one import
    const expected = { inserted: 3, skipped: 0, errors: [], import_id: expect.any(String) };
    const answer = await first;
    expect(answer, story()).toEqual({ status: 201, body: expected });
    expected.import_id = (answer.body as { import_id: string }).import_id;
    expect(api.output.some((line) => line.includes('job stalled more than allowable limit')), story()).toBe(true);
    expect(await rejoined).toEqual({ status: 201, body: expected });
    expect(await post()).toEqual({ status: 201, body: expected });
    expect(await scenario.countRows()).toEqual({ listings: 3, imports: 1 });
  });

  it('no worker: 503 once the pickup timeout passes, and nothing is written when a worker starts later', async () => {
    scenario = await createFaultScenario({ IMPORT_PICKUP_TIMEOUT_MS: '1500' });
    const api = await scenario.startApi();

    const started = Date.now();
    const { status, body, headers } = await scenario.postListings(api.baseUrl, 3);
    expect(status).toBe(503);
    expect(body).toEqual({ error: 'Import workers unavailable; nothing was written', code: 'workers_unavailable', retry_after_sec: 30, import_id: expect.any(String) });
    expect(headers.get('retry-after')).toBe('30');
    expect(headers.get('location')).toBe(`/v1/api/imports/${(body as { import_id: string }).import_id}`);
    // A sanity bound, far from the 60 s import timeout, not a performance check.
    expect(Date.now() - started).toBeLessThan(15_000);

    const worker = await scenario.startWorker();
    // Give the late worker time to find anything left in the queue (it polls immediately on start).
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(await scenario.countRows()).toEqual({ listings: 0, imports: 0 });
    expect(worker.output.some((line) => line.includes('import written'))).toBe(false);
  });
});
