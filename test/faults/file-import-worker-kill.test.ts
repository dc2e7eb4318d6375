import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createFaultScenario, type FaultScenario } from '../support/fault-scenario.js';

/**
 * A whole-file import written by real worker processes, one of them SIGKILLed mid-file: every
 * staged row is written exactly once and the import completes (docs/imports.md#whole-files).
 */
describe('file imports when a worker dies mid-file', () => {
  let scenario: FaultScenario | undefined;

  afterEach(async () => {
    await scenario?.close();
    scenario = undefined;
  });

  /** A file import recorded as the upload leaves it: `rows` listings staged, queued. */
  async function stagedFile(s: FaultScenario, rows: number): Promise<string> {
    const jobId = randomUUID();
    await s.sql.begin(async (tx) => {
      await tx`
        insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, source, created_at)
        values (${jobId}, ${s.accountId}, 'listings', 'file-kill', ${rows}, 0, 0, '[]', 'queued', 'file', now())`;
      // note: staged in SQL, as the upload would leave them, half of them with an external_id
      await tx`
        insert into import_file_rows (job_id, index, external_id, row)
        select ${jobId}, n, case when n % 2 = 0 then 'SKU-' || n end,
               jsonb_build_object(
                 'title', 'Lamp ' || n, 'description', 'A lamp', 'price_cents', 1200, 'currency', 'USD',
                 'category', 'home_decor', 'material', 'PLA',
                 'photo_urls', jsonb_build_array('https://cdn.example.test/' || n || '.jpg'),
                 'thumbnail_url', 'https://cdn.example.test/' || n || '.jpg',
                 'tags', '[]'::jsonb, 'is_available', true, 'allows_custom_orders', false,
                 'external_id', case when n % 2 = 0 then 'SKU-' || n end)
        from generate_series(0, ${rows - 1}) as n`;
    });
    return jobId;
  }

  async function progressOf(s: FaultScenario, jobId: string) {
    const [record] = await s.sql<{ state: string; processed: number | null; inserted: number }[]>`
      select state, processed, inserted from imports where job_id = ${jobId}`;
    return record!;
  }

  it('goes on from the first unwritten chunk on another worker: every row once, and the import completes', async () => {
    scenario = await createFaultScenario();
    const s = scenario;
    const rows = 60_000;
    const jobId = await stagedFile(s, rows);

    const doomed = await s.startWorker();
    // bounded: the first worker is killed once some chunks have committed, and well before the last
    await expect.poll(async () => (await progressOf(s, jobId)).processed ?? 0, { timeout: 30_000, interval: 25 }).toBeGreaterThan(0);
    doomed.child.kill('SIGKILL');
    await doomed.exited;
    const atDeath = await progressOf(s, jobId);
    expect(atDeath.state).toBe('running');
    expect(atDeath.processed!).toBeLessThan(rows);

    await s.startWorker();
    await expect.poll(async () => (await progressOf(s, jobId)).state, { timeout: 60_000, interval: 100 }).toBe('completed');

    const [written] = await s.sql<{ rows: number; distinct_titles: number }[]>`
      select count(*)::int as rows, count(distinct title)::int as distinct_titles from listings where import_job_id = ${jobId}`;
    expect(written).toEqual({ rows, distinct_titles: rows });
    expect(await progressOf(s, jobId)).toMatchObject({ state: 'completed', processed: rows, inserted: rows });
    const [left] = await s.sql<{ n: number }[]>`select count(*)::int as n from import_file_rows where job_id = ${jobId}`;
    expect(left!.n).toBe(0);
  }, 120_000);
});
