import { afterEach, describe, expect, it } from 'vitest';
import { createFaultScenario, type FaultScenario } from '../support/fault-scenario.js';
import { validListing } from '../support/fixtures.js';

/**
 * An archive is written exactly once when its worker dies (docs/catalogue.md#archive-and-delete):
 * the job runs again on another worker, and the partner gets the first run's answer, never
 * `unchanged` for rows the first run archived.
 */
describe('archive jobs when a worker dies', () => {
  let scenario: FaultScenario | undefined;

  afterEach(async () => {
    await scenario?.close();
    scenario = undefined;
  });

  async function seed(s: FaultScenario, baseUrl: string, count: number): Promise<string[]> {
    const ids = Array.from({ length: count }, (_, i) => `CRASH-${i}`);
    const res = await fetch(`${baseUrl}/v1/api/listings/bulk`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ listings: ids.map((id) => validListing({ external_id: id })) }),
    });
    expect(res.status).toBe(201);
    return ids;
  }

  const archive = (s: FaultScenario, baseUrl: string, externalIds: string[]) =>
    fetch(`${baseUrl}/v1/api/listings/bulk-archive`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ external_ids: externalIds }),
    }).then(async (res) => ({ status: res.status, body: (await res.json()) as Record<string, unknown> }));

  const archivedIn = async (s: FaultScenario) => {
    const [counts] = await s.sql<{ archived: number; imports: number }[]>`
      select (select count(*)::int from listings where archived_at is not null) as archived,
             (select count(*)::int from imports where action = 'archive' and state = 'completed') as imports`;
    return counts!;
  };

  it('SIGKILL inside the transaction: another worker takes the job over, one 200, rows archived once', async () => {
    scenario = await createFaultScenario();
    const api = await scenario.startApi();
    const seeder = await scenario.startWorker();
    const ids = await seed(scenario, api.baseUrl, 4);
    await seeder.stop('SIGTERM');
    const doomed = await scenario.startWorker({ FAULT_INJECTION: 'pause-before-commit' });

    const reply = archive(scenario, api.baseUrl, ids);
    await doomed.waitForOutput(/pausing inside the transaction/);
    expect(await archivedIn(scenario)).toEqual({ archived: 0, imports: 0 });
    await scenario.startWorker();
    await doomed.stop('SIGKILL');

    const { status, body } = await reply;
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body).toEqual({ archived: 4, unchanged: 0, skipped: 0, errors: [], import_id: expect.any(String) });
    expect(await archivedIn(scenario)).toEqual({ archived: 4, imports: 1 });
  });

  it('crash after commit, before acknowledgement: the job runs again, changes nothing, and answers the first run\'s counts', async () => {
    scenario = await createFaultScenario();
    const api = await scenario.startApi();
    const seeder = await scenario.startWorker();
    const ids = await seed(scenario, api.baseUrl, 3);
    await seeder.stop('SIGTERM');
    const doomed = await scenario.startWorker({ FAULT_INJECTION: 'crash-after-commit' });

    const reply = archive(scenario, api.baseUrl, ids);
    await doomed.exited;
    // The first run committed before it died.
    expect(await archivedIn(scenario)).toEqual({ archived: 3, imports: 1 });

    const survivor = await scenario.startWorker();
    const { status, body } = await reply;
    expect(status).toBe(200);
    // not `unchanged: 3`, which a second archive of the same rows would count
    expect(body).toEqual({ archived: 3, unchanged: 0, skipped: 0, errors: [], import_id: expect.any(String) });
    expect(await archivedIn(scenario)).toEqual({ archived: 3, imports: 1 });
    expect(survivor.output.some((line) => line.includes('import written'))).toBe(true);
  });
});
