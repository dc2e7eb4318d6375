import type { LightMyRequestResponse } from 'fastify';
import { parse } from 'csv-parse/sync';
import { Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ImportJobData, ImportResult } from '../../src/shared/import/import-job.js';
import { IMPORT_QUEUE_NAME } from '../../src/shared/import/import-queue.js';
import { ImportRowsStore } from '../../src/shared/import/rows-store.js';
import { createRedis } from '../../src/shared/infra/redis.js';
import { createImportProcessor } from '../../src/worker/import-processor.js';
import { purgeEndedImports } from '../../src/shared/repositories/import-retention.js';
import { recordFileRowErrors, stagedRow, type StagedRow } from '../../src/shared/repositories/import-files.js';
import { ListingRowSchema } from '../../src/shared/rows/listing-row.js';
import type { RowError } from '../../src/shared/rows/row-errors.js';
import { writeFileChunk } from '../../src/worker/write-file-chunk.js';
import { bearer, validListing, validMachine } from '../support/fixtures.js';
import { stageInChunks } from '../support/staged-file.js';
import { commitGate } from '../support/hold-in-transaction.js';
import { newPartner } from '../support/bulk-endpoint.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * The import resource (docs/imports.md): every import that wrote or may write is named in its
 * answer, and read back from its record by the account that sent it, and by no other.
 */
describe('GET /v1/api/imports (the import resource)', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => {
    await service?.close();
  });

  const post = (key: string, kind: 'listings' | 'machines', rows: object[], headers: Record<string, string> = {}, query = '') =>
    service.request({ method: 'POST', url: `/v1/api/${kind}/bulk${query}`, headers: { ...bearer(key), ...headers }, payload: { [kind]: rows } });
  const get = (key: string, url: string, headers: Record<string, string> = {}) => service.request({ method: 'GET', url, headers: { ...bearer(key), ...headers } });

  function importIdOf(res: LightMyRequestResponse): string {
    expect(res.statusCode).toBe(201);
    const id = res.json<{ import_id: string }>().import_id;
    expect(id.length).toBeGreaterThan(0);
    expect(id.length).toBeLessThanOrEqual(64);
    expect(res.headers['location']).toBe(`/v1/api/imports/${id}`);
    return id;
  }

  it('reads an import answered 201 as completed, with the counts and the failed rows its 201 had', async () => {
    const { key } = await newPartner(service);
    const rows = [validListing({ external_id: 'A-1' }), validListing({ external_id: 'A-2', currency: 'EUR' }), validListing({ title: '' })];
    const created = await post(key, 'listings', rows);
    const id = importIdOf(created);
    const answered = created.json<{ inserted: number; updated: number; unchanged: number; skipped: number; errors: unknown[] }>();

    const res = await get(key, `/v1/api/imports/${id}`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-ratelimit-remaining-minute']).toBeDefined();
    const found = res.json<{ created_at: string; started_at: string; finished_at: string }>();
    expect(found).toEqual({
      id,
      kind: 'listings',
      source: 'request',
      // every import but an archive, a delete or a mirror (docs/catalogue.md)
      action: 'upsert',
      mode: 'upsert',
      removal: null,
      state: 'completed',
      created_at: expect.any(String),
      started_at: expect.any(String),
      finished_at: expect.any(String),
      rows: { received: 3, processed: 3, inserted: answered.inserted, updated: answered.updated, unchanged: answered.unchanged, archived: 0, deleted: 0, skipped: 2 },
      error_count: 2,
    });
    expect(Date.parse(found.created_at)).toBeLessThanOrEqual(Date.parse(found.started_at));
    expect(Date.parse(found.started_at)).toBeLessThanOrEqual(Date.parse(found.finished_at));

    const errors = await get(key, `/v1/api/imports/${id}/errors`);
    expect(errors.statusCode).toBe(200);
    expect(errors.json()).toEqual({ data: answered.errors, has_more: false });
  });

  it('answers a replay with the same import, and a dry run and a refused request with none', async () => {
    const { key } = await newPartner(service);
    const machine = validMachine();
    const first = await post(key, 'machines', [machine], { 'idempotency-key': 'night-1' });
    const replay = await post(key, 'machines', [machine], { 'idempotency-key': 'night-1' });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(importIdOf(replay)).toBe(importIdOf(first));

    const dryRun = await post(key, 'machines', [validMachine()], {}, '?dry_run=true');
    expect(dryRun.statusCode).toBe(200);
    expect(dryRun.json()).not.toHaveProperty('import_id');
    expect(dryRun.headers['location']).toBeUndefined();
    const refused = await post(key, 'machines', [validMachine({ category: '' })]);
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).not.toHaveProperty('import_id');
    expect(refused.headers['location']).toBeUndefined();

    const list = await get(key, '/v1/api/imports');
    expect(list.json<{ data: { id: string }[] }>().data.map((found) => found.id)).toEqual([importIdOf(first)]);
  });

  it('answers 404 "Import not found" alike for another account\'s import, an unknown id and a malformed one', async () => {
    const owner = await newPartner(service);
    const stranger = await newPartner(service);
    const id = importIdOf(await post(owner.key, 'listings', [validListing()]));
    expect((await get(owner.key, `/v1/api/imports/${id}`)).statusCode).toBe(200);

    const unknown = crypto.randomUUID();
    const probes = [
      `/v1/api/imports/${id}`,
      `/v1/api/imports/${unknown}`,
      '/v1/api/imports/not-an-id',
      `/v1/api/imports/${'x'.repeat(65)}`,
      `/v1/api/imports/${id}/errors`,
      `/v1/api/imports/${unknown}/errors`,
    ];
    const shapes = [];
    for (const url of probes) {
      const res = await get(stranger.key, url);
      // everything a partner could compare: status, body, and which headers came (their values
      // are the request's own id and the account's own quota)
      shapes.push({ status: res.statusCode, body: res.body, headers: Object.keys(res.headers).sort() });
    }
    for (const shape of shapes) expect(shape).toEqual({ ...shapes[0], body: JSON.stringify({ error: 'Import not found', code: 'import_not_found' }) });
    expect(shapes[0]!.status).toBe(404);
    // the owner's view is not disturbed, and another account's id cannot be a cursor either
    const cursor = await get(stranger.key, `/v1/api/imports?starting_after=${id}`);
    expect(cursor.statusCode).toBe(400);
    expect(cursor.json()).toEqual({ error: 'starting_after: no such import', code: 'unknown_starting_after' });
  });

  it('needs jobs:read or listings:write; a key with neither gets 403 naming jobs_read', async () => {
    const { account, key } = await newPartner(service);
    const id = importIdOf(await post(key, 'listings', [validListing()]));
    const reader = await service.createKey(account, ['jobs:read']);
    expect((await get(reader, `/v1/api/imports/${id}`)).statusCode).toBe(200);
    expect((await get(reader, '/v1/api/imports')).statusCode).toBe(200);

    const other = await service.createKey(account, ['listings:read']);
    for (const url of [`/v1/api/imports/${id}`, '/v1/api/imports', `/v1/api/imports/${id}/errors`]) {
      const res = await get(other, url);
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({ error: 'Missing required scope: jobs_read', code: 'missing_scope' });
      expect(res.headers['x-ratelimit-remaining-minute']).toBeDefined();
    }
  });

  it('refuses a revoked key on the very next read, as on every API-key route', async () => {
    const { account, key } = await newPartner(service);
    const id = importIdOf(await post(key, 'listings', [validListing()]));
    const reader = await service.createKey(account, ['jobs:read']);
    expect((await get(reader, `/v1/api/imports/${id}`)).statusCode).toBe(200);
    const [record] = await service.sql<{ id: string }[]>`select id from api_keys where account_id = ${account.id} and 'jobs:read' = any(scopes)`;
    const revoked = await service.request({ method: 'DELETE', url: `/v1/api/keys/${record!.id}`, headers: bearer(account.sessionToken) });
    expect(revoked.statusCode).toBe(200);
    for (const url of [`/v1/api/imports/${id}`, '/v1/api/imports', `/v1/api/imports/${id}/errors`]) {
      const res = await get(reader, url);
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ error: 'Invalid API key', code: 'invalid_api_key' });
    }
  });

  it('lists the account\'s imports newest first, a page at a time', async () => {
    const { key } = await newPartner(service);
    const ids: string[] = [];
    for (let n = 0; n < 5; n += 1) ids.push(importIdOf(await post(key, 'listings', [validListing({ title: `Import ${n}` })])));
    const newestFirst = [...ids].reverse();

    const seen: string[] = [];
    let cursor = '';
    for (let pages = 0; pages < 5; pages += 1) {
      const res = await get(key, `/v1/api/imports?limit=2${cursor}`);
      expect(res.statusCode).toBe(200);
      const page = res.json<{ data: { id: string }[]; has_more: boolean }>();
      seen.push(...page.data.map((found) => found.id));
      if (!page.has_more) break;
      cursor = `&starting_after=${page.data.at(-1)!.id}`;
    }
    expect(seen).toEqual(newestFirst);
    const all = await get(key, '/v1/api/imports');
    expect(all.json()).toMatchObject({ has_more: false });
    expect(all.json<{ data: { id: string }[] }>().data.map((found) => found.id)).toEqual(newestFirst);
  });

  it.each([
    ['/v1/api/imports?limit=0', 'limit must be a whole number from 1 to 100', 'invalid_limit'],
    ['/v1/api/imports?limit=101', 'limit must be a whole number from 1 to 100', 'invalid_limit'],
    ['/v1/api/imports?limit=2.5', 'limit must be a whole number from 1 to 100', 'invalid_limit'],
    ['/v1/api/imports?limit=ten', 'limit must be a whole number from 1 to 100', 'invalid_limit'],
    ['/v1/api/imports?limit=1&limit=2', 'limit must be a whole number from 1 to 100', 'invalid_limit'],
    ['/v1/api/imports?starting_after=nope', 'starting_after: no such import', 'unknown_starting_after'],
    ['/v1/api/imports?page=2', 'Unknown query parameter: page', 'unknown_query_parameter'],
    ['/v1/api/imports/some-id/errors?limit=1001', 'limit must be a whole number from 1 to 1000', 'invalid_limit'],
    ['/v1/api/imports/some-id/errors?starting_after=-1', 'starting_after must be a row index (a whole number from 0)', 'invalid_starting_after'],
    ['/v1/api/imports/some-id/errors?starting_after=x', 'starting_after must be a row index (a whole number from 0)', 'invalid_starting_after'],
    ['/v1/api/imports/some-id?verbose=1', 'Unknown query parameter: verbose', 'unknown_query_parameter'],
  ])('refuses %s with 400 "%s" (%s)', async (url, error, code) => {
    const { key } = await newPartner(service);
    const res = await get(key, url);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error, code });
  });

  it('pages the failed rows in index order, and downloads them all as CSV that is safe in a spreadsheet', async () => {
    const { key } = await newPartner(service);
    const rows = [
      validListing(),
      validListing({ external_id: '=HYPERLINK("http://evil.example","x")', price_cents: -1 }),
      validListing({ external_id: '@SUM(A1)', currency: 'EUR', material: '' }),
      validListing({ external_id: 'plain, "quoted"', category: 'nope' }),
      validListing(),
    ];
    const id = importIdOf(await post(key, 'listings', rows));
    const all = (await get(key, `/v1/api/imports/${id}/errors`)).json<{ data: { index: number; external_id?: string; details: { field: string; code: string; message: string }[] }[] }>().data;
    expect(all.map((error) => error.index)).toEqual([1, 2, 3]);

    const first = (await get(key, `/v1/api/imports/${id}/errors?limit=2`)).json<{ data: { index: number }[]; has_more: boolean }>();
    expect(first.data.map((error) => error.index)).toEqual([1, 2]);
    expect(first.has_more).toBe(true);
    const second = (await get(key, `/v1/api/imports/${id}/errors?limit=2&starting_after=2`)).json<{ data: { index: number }[]; has_more: boolean }>();
    expect(second).toEqual({ data: [all[2]], has_more: false });

    const csv = await get(key, `/v1/api/imports/${id}/errors`, { accept: 'text/csv' });
    expect(csv.statusCode).toBe(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.headers['content-disposition']).toBe(`attachment; filename="import-${id}-errors.csv"`);
    expect(csv.headers['x-ratelimit-remaining-minute']).toBeDefined();
    const records = parse(csv.body, { columns: true }) as Record<string, string>[];
    const expected = all.flatMap((error) =>
      error.details.map(({ field, code, message }) => ({ index: String(error.index), external_id: error.external_id ?? '', field, code, message })),
    );
    // a cell a spreadsheet would run as a formula starts with ', and nothing else changes
    const neutralised = (cell: string) => (/^[=+\-@\t\r]/.test(cell) ? `'${cell}` : cell);
    expect(records).toEqual(expected.map((record) => ({ ...record, external_id: neutralised(record.external_id) })));
    expect(records.some((record) => record['external_id']!.startsWith("'="))).toBe(true);
    expect(records.some((record) => record['external_id']!.startsWith("'@"))).toBe(true);
    expect(csv.body.split('\n')[0]).toBe('index,external_id,field,code,message');

    // JSON stays the answer unless CSV is asked for
    const json = await get(key, `/v1/api/imports/${id}/errors`, { accept: 'application/json, text/csv;q=0.5' });
    expect(json.headers['content-type']).toMatch(/^application\/json/);
  });

  it('answers 404 for an import purged after IMPORT_RETENTION_DAYS, with its error list, and keeps a younger one', async () => {
    const { key } = await newPartner(service);
    const old = importIdOf(await post(key, 'listings', [validListing(), validListing({ currency: 'EUR' })]));
    const young = importIdOf(await post(key, 'listings', [validListing()]));
    // the old import ended 31 days ago
    await service.sql`update imports set finished_at = now() - interval '31 days', created_at = now() - interval '31 days' where job_id = ${old}`;
    expect(await purgeEndedImports(service.sql, { retentionDays: 30, limit: 1_000 })).toBeGreaterThanOrEqual(1);

    for (const url of [`/v1/api/imports/${old}`, `/v1/api/imports/${old}/errors`]) {
      const res = await get(key, url);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: 'Import not found', code: 'import_not_found' });
    }
    expect((await get(key, `/v1/api/imports/${young}`)).statusCode).toBe(200);
    expect((await get(key, '/v1/api/imports')).json<{ data: { id: string }[] }>().data.map((found) => found.id)).toEqual([young]);
  });

  it('keeps reading an import from its record when the queue has forgotten it', async () => {
    const { key } = await newPartner(service);
    const id = importIdOf(await post(key, 'listings', [validListing()]));
    const before = (await get(key, `/v1/api/imports/${id}`)).json();
    // a Redis that lost its data: the queue and every job in it are gone
    await service.deps.queue.obliterate({ force: true });
    const after = await get(key, `/v1/api/imports/${id}`);
    expect(after.statusCode).toBe(200);
    expect(after.json()).toEqual(before);
  });
});

describe('an import answered 503 or 504 (the import resource)', () => {
  let service: TestService;

  beforeAll(async () => {
    // No worker of its own: each test starts the one it needs.
    service = await startTestService({ worker: false, env: { IMPORT_PICKUP_TIMEOUT_MS: '500', IMPORT_TIMEOUT_MS: '500' } });
  });
  afterAll(async () => {
    await service?.close();
  });

  const post = (key: string) =>
    service.request({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(key), payload: { listings: [validListing(), validListing({ currency: 'EUR' })] } });
  const read = async (key: string, id: string) => (await service.request({ method: 'GET', url: `/v1/api/imports/${id}`, headers: bearer(key) })).json<Record<string, unknown>>();

  it('names the import a 503 says wrote nothing, and reads it failed', async () => {
    const { key } = await newPartner(service);
    const res = await post(key);
    expect(res.statusCode).toBe(503);
    const { import_id: id } = res.json<{ import_id: string }>();
    expect(res.json()).toEqual({ error: 'Import workers unavailable; nothing was written', code: 'workers_unavailable', retry_after_sec: 30, import_id: id });
    expect(res.headers['location']).toBe(`/v1/api/imports/${id}`);
    expect(await read(key, id)).toMatchObject({
      id,
      state: 'failed',
      started_at: null,
      finished_at: expect.any(String),
      rows: { received: 2, processed: 1, inserted: 0, updated: 0, unchanged: 0, skipped: 1 },
      error_count: 1,
    });
  });

  it('lets an import held in its transaction and answered 504 be watched: running until its job ends, then completed with what its 201 would have said', async () => {
    const { key } = await newPartner(service);
    // A worker that writes the import and holds its transaction open, its record and rows in
    // but uncommitted, until the test lets it commit.
    const gate = commitGate();
    const connection = createRedis(service.config, 'blocking');
    const write = createImportProcessor(service.deps.sql, new ImportRowsStore(connection, service.config.redisPrefix), service.deps.log, {
      faults: { beforeCommit: gate.beforeCommit },
    });
    const held = new Worker<ImportJobData, ImportResult>(IMPORT_QUEUE_NAME, write, { connection, prefix: service.config.redisPrefix });
    try {
      const res = await post(key);
      await gate.reached;
      expect(res.statusCode).toBe(504);
      const { import_id: id } = res.json<{ import_id: string }>();
      expect(res.json()).toEqual({ error: 'Import is still running; check before retrying', code: 'import_still_running', request_id: expect.any(String), import_id: id });
      expect(res.headers['location']).toBe(`/v1/api/imports/${id}`);
      expect(await read(key, id)).toMatchObject({ id, state: 'running', finished_at: null, rows: { received: 2, inserted: 0, skipped: 1 } });
      const list = await service.request({ method: 'GET', url: '/v1/api/imports', headers: bearer(key) });
      expect(list.json()).toMatchObject({ data: [{ id, state: 'running' }], has_more: false });

      gate.release();
      await vi.waitFor(async () => expect(await read(key, id)).toMatchObject({ state: 'completed' }), { timeout: 10_000, interval: 50 });
      expect(await read(key, id)).toMatchObject({
        state: 'completed',
        started_at: expect.any(String),
        finished_at: expect.any(String),
        rows: { received: 2, processed: 2, inserted: 1, updated: 0, unchanged: 0, skipped: 1 },
        error_count: 1,
      });
    } finally {
      gate.release();
      await held.close();
      connection.disconnect();
    }
  });
});

describe('GET /v1/api/imports (a file import)', () => {
  let service: TestService;

  beforeAll(async () => {
    // note: no worker: the tests write the chunks themselves, one at a time.
    service = await startTestService({ worker: false });
  });
  afterAll(async () => {
    await service?.close();
  });

  const get = (key: string, url: string, headers: Record<string, string> = {}) => service.request({ method: 'GET', url, headers: { ...bearer(key), ...headers } });
  const read = async (key: string, id: string) => (await get(key, `/v1/api/imports/${id}`)).json<Record<string, unknown>>();

  /** A failed row of a file at `index`, with an `external_id` when given. */
  const failedRow = (index: number, externalId?: string): RowError => ({
    index,
    ...(externalId === undefined ? {} : { external_id: externalId }),
    reason: 'price_cents: must be a whole number from 0',
    details: [{ field: 'price_cents', code: 'out_of_range', message: 'must be a whole number from 0' }],
  });

  /**
   * A file import recorded as the upload leaves it: queued, its valid rows staged at their
   * positions in chunks of `chunkRows`, its failed rows kept (in the order given), `skipped`
   * their number.
   */
  async function queuedFile(accountId: string, staged: StagedRow[], failed: RowError[] = [], chunkRows = 100): Promise<string> {
    const importId = crypto.randomUUID();
    await service.sql.begin(async (tx) => {
      await tx`
        insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, source, created_at)
        values (${importId}, ${accountId}, 'listings', 'file-read-test', ${staged.length + failed.length}, 0, ${failed.length}, '[]', 'queued', 'file', now())`;
      expect(await stageInChunks(tx, importId, staged, chunkRows)).toEqual([]);
      await recordFileRowErrors(tx, importId, failed);
    });
    return importId;
  }
  const listingsAt = (first: number, count: number, row: (index: number) => Record<string, unknown> = () => validListing()): StagedRow[] =>
    Array.from({ length: count }, (_, n) => stagedRow(first + n, ListingRowSchema.parse(row(first + n))));

  it('shows a file import\'s counts as its chunks commit, while it runs and after it was cancelled', async () => {
    const { account, key } = await newPartner(service);
    // the first file creates L-0 to L-9; the second sends them again, three changed, then ten new rows
    const first = await queuedFile(account.id, listingsAt(0, 10, (n) => validListing({ title: `Lamp ${n}`, external_id: `L-${n}` })));
    while ((await writeFileChunk(service.sql, first)).state === 'written');
    const id = await queuedFile(
      account.id,
      [...listingsAt(0, 10, (n) => validListing({ title: n < 3 ? `Lamp ${n}, new` : `Lamp ${n}`, external_id: `L-${n}` })), ...listingsAt(12, 10)],
      [failedRow(10), failedRow(11)],
      15,
    );

    expect(await read(key, id)).toMatchObject({
      source: 'file',
      state: 'queued',
      started_at: null,
      finished_at: null,
      rows: { received: 22, processed: 2, inserted: 0, updated: 0, unchanged: 0, skipped: 2 },
      error_count: 2,
    });

    // the first chunk: L-0 to L-9 (three changed), and the rows at 12 to 16
    expect(await writeFileChunk(service.sql, id)).toMatchObject({ state: 'written', rows: 15 });
    const running = await read(key, id);
    expect(running).toMatchObject({
      state: 'running',
      started_at: expect.any(String),
      finished_at: null,
      rows: { received: 22, processed: 17, inserted: 5, updated: 3, unchanged: 7, skipped: 2 },
      error_count: 2,
    });
    // the list reads it the same
    const list = (await get(key, '/v1/api/imports')).json<{ data: Record<string, unknown>[] }>();
    expect(list.data.find((found) => found['id'] === id)).toEqual(running);

    await service.sql`update imports set state = 'cancelled', finished_at = now() where job_id = ${id}`;
    expect(await read(key, id)).toMatchObject({
      state: 'cancelled',
      finished_at: expect.any(String),
      rows: { received: 22, processed: 17, inserted: 5, updated: 3, unchanged: 7, skipped: 2 },
    });
  });

  it('pages a file import\'s failed rows from its own table in index order, across every edge, and downloads them all as CSV', async () => {
    const { account, key } = await newPartner(service);
    // 2,500 failed rows at the odd positions up to 4,999, kept out of order; the valid rows between
    const failed = Array.from({ length: 2_500 }, (_, n) => failedRow(2 * n + 1, n === 7 ? '=cmd|calc' : `SKU-${n}`)).reverse();
    const id = await queuedFile(account.id, listingsAt(0, 3), failed);
    const inOrder = [...failed].reverse();
    type Page = { data: RowError[]; has_more: boolean };
    const page = async (query: string) => {
      const res = await get(key, `/v1/api/imports/${id}/errors${query}`);
      expect(res.statusCode, res.body).toBe(200);
      return res.json<Page>();
    };

    expect(await read(key, id)).toMatchObject({ error_count: 2_500 });
    expect(await page('')).toEqual({ data: inOrder.slice(0, 100), has_more: true });
    // a cursor between two failed rows, and one on a failed row
    expect(await page('?limit=3&starting_after=4')).toEqual({ data: inOrder.slice(2, 5), has_more: true });
    expect(await page('?limit=3&starting_after=5')).toEqual({ data: inOrder.slice(3, 6), has_more: true });
    // every page of 1,000 in turn: the last is exactly what is left
    const seen: RowError[] = [];
    let cursor = '';
    for (let pages = 0; pages < 10; pages += 1) {
      const next = await page(`?limit=1000${cursor}`);
      seen.push(...next.data);
      if (!next.has_more) break;
      cursor = `&starting_after=${next.data.at(-1)!.index}`;
    }
    expect(seen).toEqual(inOrder);
    expect(await page('?limit=500&starting_after=3999')).toEqual({ data: inOrder.slice(2_000), has_more: false });
    expect(await page('?limit=499&starting_after=3999')).toEqual({ data: inOrder.slice(2_000, 2_499), has_more: true });
    // past the last failed row, and past any row index there can be
    expect(await page('?starting_after=4999')).toEqual({ data: [], has_more: false });
    expect(await page('?starting_after=99999999999')).toEqual({ data: [], has_more: false });

    const csv = await get(key, `/v1/api/imports/${id}/errors`, { accept: 'text/csv' });
    expect(csv.statusCode).toBe(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    const records = parse(csv.body, { columns: true }) as Record<string, string>[];
    expect(records).toHaveLength(2_500);
    expect(records.map((record) => Number(record['index']))).toEqual(inOrder.map((error) => error.index));
    expect(records[7]).toEqual({ index: '15', external_id: "'=cmd|calc", field: 'price_cents', code: 'out_of_range', message: 'must be a whole number from 0' });
  });

  it('reads a file import with no failed rows as an empty list, and another account\'s file import as not found', async () => {
    const owner = await newPartner(service);
    const stranger = await newPartner(service);
    const id = await queuedFile(owner.account.id, listingsAt(0, 2));
    expect((await get(owner.key, `/v1/api/imports/${id}/errors`)).json()).toEqual({ data: [], has_more: false });
    expect((await get(owner.key, `/v1/api/imports/${id}/errors`, { accept: 'text/csv' })).body).toBe('index,external_id,field,code,message\n');
    for (const url of [`/v1/api/imports/${id}`, `/v1/api/imports/${id}/errors`]) {
      const res = await get(stranger.key, url);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: 'Import not found', code: 'import_not_found' });
    }
  });
});
