import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createFaultScenario, type FaultScenario } from '../support/fault-scenario.js';
import { listingLine, uploadNdjson } from '../support/ndjson-upload.js';
import { stagedRowsLeft } from '../support/staged-file.js';

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
    const importId = randomUUID();
    await s.sql.begin(async (tx) => {
      await tx`
        insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, source, created_at)
        values (${importId}, ${s.accountId}, 'listings', 'file-kill', ${rows}, 0, 0, '[]', 'queued', 'file', now())`;
      // note: staged in SQL, as the upload would leave them (chunks of a thousand rows, and the ids
      // they claim), half of them with an external_id
      await tx`
        insert into import_file_chunks (job_id, first_index, rows, body, with_external_ids)
        select ${importId}, min(n), count(*), json_agg(json_build_object(
                 'title', 'Lamp ' || n, 'description', 'A lamp', 'price_cents', 1200, 'currency', 'USD',
                 'category', 'home_decor', 'material', 'PLA',
                 'photo_urls', json_build_array('https://cdn.example.test/' || n || '.jpg'),
                 'thumbnail_url', 'https://cdn.example.test/' || n || '.jpg',
                 'tags', '[]'::json, 'is_available', true, 'allows_custom_orders', false,
                 'external_id', case when n % 2 = 0 then 'SKU-' || n end) order by n)::text, true
        from generate_series(0, ${rows - 1}) as n
        group by n / 1000`;
      await tx`
        insert into import_file_external_ids (job_id, external_id, index)
        select ${importId}, 'SKU-' || n, n from generate_series(0, ${rows - 1}, 2) as n`;
    });
    return importId;
  }

  async function progressOf(s: FaultScenario, importId: string) {
    const [record] = await s.sql<{ state: string; processed: number | null; inserted: number }[]>`
      select state, processed, inserted from imports where job_id = ${importId}`;
    return record!;
  }

  it('goes on from the first unwritten chunk on another worker: every row once, and the import completes', async () => {
    scenario = await createFaultScenario();
    const s = scenario;
    const rows = 60_000;
    const importId = await stagedFile(s, rows);

    const doomed = await s.startWorker();
    // bounded: the first worker is killed once some chunks have committed, and well before the last
    await expect.poll(async () => (await progressOf(s, importId)).processed ?? 0, { timeout: 30_000, interval: 25 }).toBeGreaterThan(0);
    doomed.child.kill('SIGKILL');
    await doomed.exited;
    const atDeath = await progressOf(s, importId);
    expect(atDeath.state).toBe('running');
    expect(atDeath.processed!).toBeLessThan(rows);

    await s.startWorker();
    await expect.poll(async () => (await progressOf(s, importId)).state, { timeout: 60_000, interval: 100 }).toBe('completed');

    const [written] = await s.sql<{ rows: number; distinct_titles: number }[]>`
      select count(*)::int as rows, count(distinct title)::int as distinct_titles from listings where import_job_id = ${importId}`;
    expect(written).toEqual({ rows, distinct_titles: rows });
    expect(await progressOf(s, importId)).toMatchObject({ state: 'completed', processed: rows, inserted: rows });
    expect(await stagedRowsLeft(s.sql, importId)).toBe(0);
  }, 120_000);

  it('finishes a file uploaded to a running API after its first worker was SIGKILLed mid-file: every row once, and GET reads it completed with its counts', async () => {
    scenario = await createFaultScenario();
    const s = scenario;
    const api = await s.startApi();
    const rows = 60_000;
    // every thousandth line fails (not USD): 60 failed rows, kept beside the staged ones; the even
    // lines carry an external_id, the odd ones none, so that a row written twice shows twice
    const failsAt = (n: number) => n % 1_000 === 999;
    const failed = 60;
    const valid = rows - failed;
    const line = (n: number) => listingLine(n, { currency: failsAt(n) ? 'EUR' : 'USD', externalId: n % 2 === 0 });
    const uploaded = await uploadNdjson(api.baseUrl, s.apiKey, rows, { line });
    expect(uploaded.status, uploaded.body).toBe(202);
    const { import: accepted } = JSON.parse(uploaded.body) as { import: { id: string; state: string; rows: Record<string, number> } };
    expect(accepted).toMatchObject({ state: 'queued', rows: { received: rows, skipped: failed } });
    const importId = accepted.id;

    const doomed = await s.startWorker();
    // bounded: killed once some chunks have committed, and well before the last
    await expect.poll(async () => (await progressOf(s, importId)).inserted, { timeout: 30_000, interval: 25 }).toBeGreaterThan(0);
    doomed.child.kill('SIGKILL');
    await doomed.exited;
    const atDeath = await progressOf(s, importId);
    expect(atDeath.state).toBe('running');
    expect(atDeath.inserted).toBeLessThan(valid);

    await s.startWorker();
    await expect.poll(async () => (await progressOf(s, importId)).state, { timeout: 60_000, interval: 100 }).toBe('completed');

    const [written] = await s.sql<{ rows: number; with_ids: number; distinct_ids: number; distinct_titles: number; failing: number }[]>`
      select count(*)::int as rows, count(external_id)::int as with_ids, count(distinct external_id)::int as distinct_ids,
             count(distinct title)::int as distinct_titles,
             count(*) filter (where substring(title from 6)::int % 1000 = 999)::int as failing
      from listings where import_job_id = ${importId}`;
    expect(written).toEqual({ rows: valid, with_ids: rows / 2, distinct_ids: rows / 2, distinct_titles: valid, failing: 0 });
    const read = await fetch(`${api.baseUrl}/v1/api/imports/${importId}`, { headers: { authorization: `Bearer ${s.apiKey}` } });
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({
      id: importId,
      source: 'file',
      state: 'completed',
      finished_at: expect.any(String),
      rows: { received: rows, processed: rows, inserted: valid, updated: 0, unchanged: 0, skipped: failed },
      error_count: failed,
    });
    expect(await stagedRowsLeft(s.sql, importId)).toBe(0);
  }, 120_000);

  it('removes what a mirror left out exactly once when its worker is SIGKILLed in the middle of the removal: the next worker removes it all, and the import completes', async () => {
    scenario = await createFaultScenario();
    const s = scenario;
    const left = 150_000;
    // the account's catalogue: `left` listings the file leaves out, and some without an id
    await s.sql`
      insert into listings (account_id, title, description, price_cents, currency, category, material, photo_urls, thumbnail_url, maker_name, external_id, created_at)
      select ${s.accountId}, 'Old ' || n, 'An old lamp', 1200, 'USD', 'home_decor', 'PLA', array['https://cdn.example.test/old.jpg'], 'https://cdn.example.test/old.jpg', 'Maker',
             case when n < ${left} then 'OLD-' || n end, now() - interval '1 day'
      from generate_series(0, ${left + 9}) as n`;
    // a mirror of a file of 2,000 other rows, staged as its upload leaves it, its guard wide open
    const importId = await stagedFile(s, 2_000);
    await s.sql`
      update imports set mode = 'mirror', removal_missing = 'archive', removal_max_percent = 100, removal_state = 'pending', removal_rows = 0
      where job_id = ${importId}`;

    const doomed = await s.startWorker();
    // bounded: killed while its removal's statement runs, before it commits (note: pg_stat_activity
    // keeps the statement's first 1,024 bytes, which name left_out)
    await expect
      .poll(async () => (await s.sql`select 1 from pg_stat_activity where pid <> pg_backend_pid() and state = 'active' and query like '%with left_out as materialized%'`).length, {
        timeout: 60_000,
        interval: 5,
      })
      .toBe(1);
    doomed.child.kill('SIGKILL');
    await doomed.exited;
    const [atDeath] = await s.sql<{ state: string; removal_state: string }[]>`select state, removal_state from imports where job_id = ${importId}`;
    expect(atDeath).toEqual({ state: 'running', removal_state: 'pending' });

    await s.startWorker();
    await expect.poll(async () => (await progressOf(s, importId)).state, { timeout: 90_000, interval: 100 }).toBe('completed');
    const [record] = await s.sql<{ removal_state: string; removal_rows: number; archived: number }[]>`
      select removal_state, removal_rows, archived from imports where job_id = ${importId}`;
    expect(record).toEqual({ removal_state: 'done', removal_rows: left, archived: left });
    const [rows] = await s.sql<{ archived: number; active_old: number; without_id: number; new_rows: number }[]>`
      select count(*) filter (where archived_at is not null)::int as archived,
             count(*) filter (where archived_at is null and external_id like 'OLD-%')::int as active_old,
             count(*) filter (where external_id is null and title like 'Old %' and archived_at is null)::int as without_id,
             count(*) filter (where import_job_id = ${importId})::int as new_rows
      from listings where account_id = ${s.accountId}`;
    expect(rows).toEqual({ archived: left, active_old: 0, without_id: 10, new_rows: 2_000 });
  }, 180_000);
});
