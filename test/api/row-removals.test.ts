import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ImportKind } from '../../src/shared/import/import-kinds.js';
import type { RowError } from '../../src/shared/rows/row-errors.js';
import { bearer, validListing, validMachine } from '../support/fixtures.js';
import { bulkEndpoint, newPartner, postBulk, type BulkEndpoint } from '../support/bulk-endpoint.js';
import { startTestService, withLateWorker, type TestAccount, type TestService } from '../support/test-service.js';

type Action = 'archive' | 'delete';

const REPLAYED = 'idempotent-replayed';
const MISMATCH_BODY = { error: 'Idempotency-Key was already used with a different request body', code: 'idempotency_key_reused' };

/** The error entry of an entry that failed, written out: `entry(3, 'external_id', 'not_found', 'names no listing of this account', 'SKU-1')`. */
function entry(index: number, field: 'external_id' | 'id', code: string, message: string, key?: string): RowError {
  return { index, ...(key === undefined ? {} : { [field]: key }), reason: `${field}: ${message}`, details: [{ field, code, message }] } as RowError;
}

const row = (kind: ImportKind, overrides: Record<string, unknown> = {}) => (kind === 'listings' ? validListing(overrides) : validMachine(overrides));

describe('POST /v1/api/{listings,machines}/bulk-archive and bulk-delete', () => {
  let service: TestService;
  let listingsKit: BulkEndpoint;

  beforeAll(async () => {
    service = await startTestService();
    listingsKit = bulkEndpoint(service, 'listings');
  });
  afterAll(async () => {
    await listingsKit?.close();
    await service?.close();
  });

  function remove(kind: ImportKind, action: Action, key: string, payload: object | string, options: { idempotencyKey?: string; query?: string } = {}): Promise<LightMyRequestResponse> {
    const headers: Record<string, string> = { ...bearer(key), ...(typeof payload === 'string' ? { 'content-type': 'application/json' } : {}) };
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    return service.request({ method: 'POST', url: `/v1/api/${kind}/bulk-${action}${options.query ?? ''}`, headers, payload });
  }

  /** Creates the rows of `externalIds` through the bulk endpoint; their ids by external_id. */
  async function seed(kind: ImportKind, key: string, externalIds: string[]): Promise<Record<string, string>> {
    const res = await postBulk(service, kind, key, { [kind]: externalIds.map((id) => row(kind, { external_id: id })) });
    expect(res.statusCode).toBe(201);
    const rows = await service.sql<{ id: string; external_id: string }[]>`
      select id::text, external_id from ${service.sql(kind)} where external_id = any(${service.sql.array(externalIds)}::text[])
        and import_job_id = ${res.json<{ import_id: string }>().import_id}`;
    return Object.fromEntries(rows.map((r) => [r.external_id, r.id]));
  }

  async function stateOf(kind: ImportKind, account: TestAccount) {
    return service.sql<{ external_id: string | null; archived: boolean; moved: boolean }[]>`
      select external_id, archived_at is not null as archived, updated_at is not null and updated_at >= created_at as moved
      from ${service.sql(kind)} where account_id = ${account.id} order by external_id`;
  }

  describe.each(['listings', 'machines'] as const)('%s', (kind) => {
    const noRow = `names no ${kind === 'listings' ? 'listing' : 'machine'} of this account`;

    it('archives the named active rows, counts archived ones unchanged, and reports every failing entry by index', async () => {
      const { account, key } = await newPartner(service);
      const other = await newPartner(service);
      await seed(kind, key, ['A-1', 'A-2', 'A-3']);
      await seed(kind, other.key, ['THEIRS']);
      expect((await remove(kind, 'archive', key, { external_ids: ['A-3'] })).statusCode).toBe(200);
      const rowsCounted = async (outcome: string) =>
        (await service.deps.metrics.rows.get()).values.find((v) => v.labels.kind === kind && v.labels.outcome === outcome)?.value ?? 0;
      const [archivedBefore, skippedBefore] = [await rowsCounted('archived'), await rowsCounted('skipped')];

      const res = await remove(kind, 'archive', key, {
        external_ids: ['A-1', ' A-2 ', 'A-3', 'NOPE', 'THEIRS', 'A-1', 42, null, '', '   ', 'x'.repeat(101), 'bad\u0007id', 'bad\ud800'],
      });

      expect(res.statusCode).toBe(200);
      const body = res.json<{ import_id: string }>();
      expect(body).toEqual({
        archived: 2,
        unchanged: 1,
        skipped: 10,
        errors: [
          entry(3, 'external_id', 'not_found', noRow, 'NOPE'),
          entry(4, 'external_id', 'not_found', noRow, 'THEIRS'),
          entry(5, 'external_id', 'duplicate', 'names the same row as an earlier entry', 'A-1'),
          entry(6, 'external_id', 'wrong_type', 'must be a string'),
          entry(7, 'external_id', 'wrong_type', 'must be a string'),
          entry(8, 'external_id', 'blank', 'must not be blank'),
          entry(9, 'external_id', 'blank', 'must not be blank'),
          entry(10, 'external_id', 'too_long', 'must be at most 100 characters'),
          entry(11, 'external_id', 'invalid_characters', 'must not contain control characters'),
          entry(12, 'external_id', 'invalid_characters', 'must be valid Unicode text'),
        ],
        import_id: expect.any(String),
      });
      expect(res.headers['location']).toBe(`/v1/api/imports/${body.import_id}`);
      // counted in bulk_import_rows_total as the answer counts them
      expect([(await rowsCounted('archived')) - archivedBefore, (await rowsCounted('skipped')) - skippedBefore]).toEqual([2, 10]);
      expect(await stateOf(kind, account)).toEqual([
        { external_id: 'A-1', archived: true, moved: true },
        { external_id: 'A-2', archived: true, moved: true },
        { external_id: 'A-3', archived: true, moved: true },
      ]);
      // another account's row is, to this account, a row that does not exist
      expect(await stateOf(kind, other.account)).toEqual([{ external_id: 'THEIRS', archived: false, moved: false }]);
    });

    it('deletes the named rows, active or archived, by our ids, and reports malformed, unknown, foreign and repeated ids', async () => {
      const { account, key } = await newPartner(service);
      const other = await newPartner(service);
      const ids = await seed(kind, key, ['D-1', 'D-2', 'D-3']);
      const theirs = await seed(kind, other.key, ['THEIRS']);
      expect((await remove(kind, 'archive', key, { ids: [ids['D-2']] })).json()).toMatchObject({ archived: 1 });
      const unknown = randomUUID();

      const res = await remove(kind, 'delete', key, {
        ids: [ids['D-1'], ids['D-2'], 'not-an-id', unknown, theirs['THEIRS'], ids['D-1']!.toUpperCase(), 7, ''],
      });

      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({
        deleted: 2,
        skipped: 6,
        errors: [
          entry(2, 'id', 'invalid_id', 'must be an id of ours (a UUID)'),
          entry(3, 'id', 'not_found', noRow, unknown),
          entry(4, 'id', 'not_found', noRow, theirs['THEIRS']),
          entry(5, 'id', 'duplicate', 'names the same row as an earlier entry', ids['D-1']),
          entry(6, 'id', 'wrong_type', 'must be a string'),
          entry(7, 'id', 'invalid_id', 'must be an id of ours (a UUID)'),
        ],
        import_id: expect.any(String),
      });
      expect(await stateOf(kind, account)).toEqual([{ external_id: 'D-3', archived: false, moved: false }]);
      expect(await stateOf(kind, other.account)).toEqual([{ external_id: 'THEIRS', archived: false, moved: false }]);
    });

    it('answers 400 "no valid rows" with every entry\'s error when no entry names a row of the account, and queues nothing', async () => {
      const { key } = await newPartner(service);
      const other = await newPartner(service);
      const theirs = await seed(kind, other.key, ['THEIRS']);
      const before = await listingsKit.snapshot();

      const byExternalId = await remove(kind, 'delete', key, { external_ids: ['THEIRS', 'THEIRS', ''] });
      const byId = await remove(kind, 'archive', key, { ids: [theirs['THEIRS']] });

      expect(byExternalId.statusCode).toBe(400);
      expect(byExternalId.json()).toEqual({
        error: 'no valid rows',
        code: 'no_valid_rows',
        errors: [
          entry(0, 'external_id', 'not_found', noRow, 'THEIRS'),
          entry(1, 'external_id', 'duplicate', 'names the same row as an earlier entry', 'THEIRS'),
          entry(2, 'external_id', 'blank', 'must not be blank'),
        ],
      });
      expect(byId.statusCode).toBe(400);
      expect(byId.json()).toEqual({ error: 'no valid rows', code: 'no_valid_rows', errors: [entry(0, 'id', 'not_found', noRow, theirs['THEIRS'])] });
      expect(await listingsKit.snapshot()).toEqual(before);
    });
  });

  describe('bodies refused as a whole', () => {
    const ENVELOPE = { error: 'Body must be an object with either an "external_ids" or an "ids" array', code: 'missing_entries_array' };
    it.each([
      ['not JSON', '{"external_ids": [', { error: 'Invalid JSON body', code: 'invalid_json' }],
      ['an array', '["SKU-1"]', ENVELOPE],
      ['an object with neither array', '{"external_id": ["SKU-1"]}', ENVELOPE],
      ['both arrays', '{"external_ids": ["SKU-1"], "ids": []}', ENVELOPE],
      ['external_ids that is not an array', '{"external_ids": "SKU-1"}', ENVELOPE],
      ['an empty array', '{"ids": []}', { error: 'No rows: send 1 to 1000 listings', code: 'no_rows' }],
      ['1,001 entries', JSON.stringify({ external_ids: Array.from({ length: 1_001 }, (_, i) => `SKU-${i}`) }), { error: 'Too many rows: at most 1000 listings per request', code: 'too_many_rows', received: 1_001 }],
    ])('%s: 400, nothing queued or written', async (_case, payload, expected) => {
      const { key } = await newPartner(service);
      await listingsKit.expectRefused(() => remove('listings', 'archive', key, payload), 400, expected);
    });

    it('a request without a body: 400 "Invalid JSON body", as an empty one (not a 500)', async () => {
      const { key } = await newPartner(service);
      for (const url of ['/v1/api/listings/bulk-archive', '/v1/api/machines/bulk-delete', '/v1/api/listings/bulk']) {
        await listingsKit.expectRefused(() => service.request({ method: 'POST', url, headers: bearer(key) }), 400, { error: 'Invalid JSON body', code: 'invalid_json' });
      }
    });

    it('takes 1,000 entries', async () => {
      const { key } = await newPartner(service);
      await seed('listings', key, ['LAST']);
      const res = await remove('listings', 'delete', key, { external_ids: [...Array.from({ length: 999 }, (_, i) => `NONE-${i}`), 'LAST'] });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ deleted: 1, skipped: 999 });
    });

    it('refuses a body over 1 MB with 413, and a query parameter other than dry_run (update, say) with 400', async () => {
      const { key } = await newPartner(service);
      const big = JSON.stringify({ external_ids: ['x'.repeat(1_048_576)] });
      await listingsKit.expectRefused(() => remove('listings', 'delete', key, big), 413, { error: 'Request body too large', code: 'body_too_large', limit_bytes: 1_048_576 });
      await listingsKit.expectRefused(() => remove('listings', 'archive', key, { external_ids: ['A'] }, { query: '?update=merge' }), 400, {
        error: 'Unknown query parameter: update',
        code: 'unknown_query_parameter',
      });
    });
  });

  describe('dry run', () => {
    it('answers what it would do with dry_run: true and no import, and changes nothing', async () => {
      const { account, key } = await newPartner(service);
      await seed('machines', key, ['M-1', 'M-2']);
      const before = await listingsKit.snapshot();

      const archive = await remove('machines', 'archive', key, { external_ids: ['M-1', 'NONE'] }, { query: '?dry_run=true' });
      const del = await remove('machines', 'delete', key, { external_ids: ['M-1', 'M-2'] }, { query: '?dry_run=true' });

      expect(archive.statusCode).toBe(200);
      expect(archive.json()).toEqual({ archived: 1, unchanged: 0, skipped: 1, errors: [entry(1, 'external_id', 'not_found', 'names no machine of this account', 'NONE')], dry_run: true });
      expect(archive.headers['location']).toBeUndefined();
      expect(del.json()).toEqual({ deleted: 2, skipped: 0, errors: [], dry_run: true });
      expect(await listingsKit.snapshot()).toMatchObject({ machines: before.machines, imports: before.imports });
      expect(await stateOf('machines', account)).toEqual([
        { external_id: 'M-1', archived: false, moved: false },
        { external_id: 'M-2', archived: false, moved: false },
      ]);
    });
  });

  describe('Idempotency-Key', () => {
    it('replays the same answer and writes once, also for a delete whose rows are gone; another body or another endpoint with the key is 422', async () => {
      const { account, key } = await newPartner(service);
      await seed('listings', key, ['I-1', 'I-2']);
      const body = { external_ids: ['I-1', 'I-2', 'I-9'] };

      const first = await remove('listings', 'delete', key, body, { idempotencyKey: 'sync-2026-11-27' });
      const repeat = await remove('listings', 'delete', key, body, { idempotencyKey: 'sync-2026-11-27' });
      const otherBody = await remove('listings', 'delete', key, { external_ids: ['I-1'] }, { idempotencyKey: 'sync-2026-11-27' });
      const otherEndpoint = await remove('listings', 'archive', key, body, { idempotencyKey: 'sync-2026-11-27' });
      const otherKind = await remove('machines', 'delete', key, body, { idempotencyKey: 'sync-2026-11-27' });
      const bulk = await postBulk(service, 'listings', key, { listings: [validListing()] }, 'sync-2026-11-27');

      expect(first.statusCode).toBe(200);
      expect(first.json()).toEqual({ deleted: 2, skipped: 1, errors: [entry(2, 'external_id', 'not_found', 'names no listing of this account', 'I-9')], import_id: expect.any(String) });
      expect(first.headers[REPLAYED]).toBeUndefined();
      expect(repeat.statusCode).toBe(200);
      expect(repeat.json()).toEqual(first.json());
      expect(repeat.headers[REPLAYED]).toBe('true');
      expect(repeat.headers['location']).toBe(first.headers['location']);
      for (const refused of [otherBody, otherEndpoint, otherKind, bulk]) {
        expect(refused.statusCode).toBe(422);
        expect(refused.json()).toEqual(MISMATCH_BODY);
      }
      const [imports] = await service.sql<{ n: number }[]>`select count(*)::int as n from imports where account_id = ${account.id} and action = 'delete'`;
      expect(imports!.n).toBe(1);
    });
  });

  describe('what archive and delete leave', () => {
    it('an archived row keeps its fields and external_id, leaves the active rows, and a later bulk upsert restores it, counted updated', async () => {
      const { account, key } = await newPartner(service);
      await seed('listings', key, ['R-1']);
      const [before] = await service.sql`select title, external_id from listings where account_id = ${account.id}`;

      expect((await remove('listings', 'archive', key, { external_ids: ['R-1'] })).json()).toMatchObject({ archived: 1 });
      const [archived] = await service.sql`select title, external_id, archived_at from listings where account_id = ${account.id}`;
      expect(archived).toMatchObject({ ...before, archived_at: expect.any(Date) });
      const [active] = await service.sql<{ n: number }[]>`select count(*)::int as n from listings where account_id = ${account.id} and archived_at is null`;
      expect(active!.n).toBe(0);
      // read back: gone from the active rows, listed with the archived ones, its external_id kept
      const page = (query: string) => service.request({ method: 'GET', url: `/v1/api/listings${query}`, headers: bearer(key) }).then((r) => r.json<{ data: { external_id: string; archived_at: string | null }[] }>().data);
      expect(await page('')).toEqual([]);
      expect(await page('?archived=true')).toEqual([expect.objectContaining({ external_id: 'R-1', archived_at: expect.any(String) })]);

      const restored = await postBulk(service, 'listings', key, { listings: [validListing({ external_id: 'R-1', title: before!['title'] })] });
      // the row is the one archived: restored in place, not a second one
      expect(restored.json()).toMatchObject({ inserted: 0, updated: 1, unchanged: 0, skipped: 0 });
      expect(await stateOf('listings', account)).toEqual([{ external_id: 'R-1', archived: false, moved: true }]);
      expect(await page('')).toEqual([expect.objectContaining({ external_id: 'R-1', archived_at: null })]);
    });

    it('a deleted row\'s external_id is free again: the next upsert of it inserts', async () => {
      const { account, key } = await newPartner(service);
      const ids = await seed('machines', key, ['F-1']);
      expect((await remove('machines', 'delete', key, { external_ids: ['F-1'] })).json()).toMatchObject({ deleted: 1 });

      const again = await postBulk(service, 'machines', key, { machines: [validMachine({ external_id: 'F-1' })] });

      expect(again.json()).toMatchObject({ inserted: 1, updated: 0, unchanged: 0 });
      const rows = await service.sql`select id::text from machines where account_id = ${account.id}`;
      expect(rows.map((r) => r['id'])).not.toContain(ids['F-1']);
      expect(rows).toHaveLength(1);
    });
  });

  describe('the import', () => {
    it('reads back with its action, counts and failed entries (JSON and CSV); an upsert reads action upsert', async () => {
      const { key } = await newPartner(service, {}, ['listings:write', 'jobs:read']);
      const ids = await seed('listings', key, ['G-1', 'G-2']);
      await remove('listings', 'archive', key, { ids: [ids['G-2']] });
      const unknown = randomUUID();
      const res = await remove('listings', 'archive', key, { ids: [ids['G-1'], ids['G-2'], unknown, 'nope'] });
      const importId = res.json<{ import_id: string }>().import_id;
      const read = (url: string, accept = 'application/json') => service.request({ method: 'GET', url, headers: { ...bearer(key), accept } });

      const found = await read(`/v1/api/imports/${importId}`);
      expect(found.statusCode).toBe(200);
      expect(found.json()).toMatchObject({
        id: importId,
        kind: 'listings',
        source: 'request',
        action: 'archive',
        mode: 'upsert',
        removal: null,
        state: 'completed',
        rows: { received: 4, processed: 4, inserted: 0, updated: 0, unchanged: 1, archived: 1, deleted: 0, skipped: 2 },
        error_count: 2,
      });
      const errors = await read(`/v1/api/imports/${importId}/errors`);
      expect(errors.json()).toEqual({
        data: [entry(2, 'id', 'not_found', 'names no listing of this account', unknown), entry(3, 'id', 'invalid_id', 'must be an id of ours (a UUID)')],
        has_more: false,
      });
      const csv = await read(`/v1/api/imports/${importId}/errors`, 'text/csv');
      expect(csv.body).toBe(`index,id,field,code,message\n2,${unknown},id,not_found,names no listing of this account\n3,,id,invalid_id,must be an id of ours (a UUID)\n`);

      const list = await read('/v1/api/imports?limit=3');
      const actions = list.json<{ data: { action: string; rows: { archived: number; deleted: number } }[] }>().data.map((i) => [i.action, i.rows.archived, i.rows.deleted]);
      expect(actions).toEqual([
        ['archive', 1, 0],
        ['archive', 1, 0],
        ['upsert', 0, 0],
      ]);
    });

    it('a delete by external_ids reads action delete, and its CSV keeps the external_id column', async () => {
      const { key } = await newPartner(service);
      await seed('machines', key, ['H-1']);
      const res = await remove('machines', 'delete', key, { external_ids: ['H-1', 'H-2'] });
      const importId = res.json<{ import_id: string }>().import_id;
      const found = await service.request({ method: 'GET', url: `/v1/api/imports/${importId}`, headers: bearer(key) });
      expect(found.json()).toMatchObject({ action: 'delete', rows: { received: 2, processed: 2, inserted: 0, updated: 0, unchanged: 0, archived: 0, deleted: 1, skipped: 1 } });
      const csv = await service.request({ method: 'GET', url: `/v1/api/imports/${importId}/errors`, headers: { ...bearer(key), accept: 'text/csv' } });
      expect(csv.body).toBe('index,external_id,field,code,message\n1,H-2,external_id,not_found,names no machine of this account\n');
    });
  });

  describe('an upsert and an archive of the same rows at once', () => {
    const ROUNDS = 40;
    it(`end in one of the two orders, never half-applied (${ROUNDS} times, both orders met)`, async () => {
      const { account, key } = await newPartner(service);
      const names = ['RACE-1', 'RACE-2', 'RACE-3', 'RACE-4', 'RACE-5'];
      const rows = names.map((name) => validListing({ external_id: name, title: `Race ${name}` }));
      expect((await postBulk(service, 'listings', key, { listings: rows })).statusCode).toBe(201);
      const orders = { upsertFirst: 0, archiveFirst: 0 };
      for (let round = 0; round < ROUNDS; round += 1) {
        // every round starts with the rows archived: an upsert restores them (updated), an archive finds them archived (unchanged)
        await service.sql`update listings set archived_at = now() where account_id = ${account.id}`;
        // note: which one is sent first alternates, the other follows after a few milliseconds, so
        // that their transactions overlap in either order (the archive's API look-up is a round trip more)
        const lag = (first: boolean) => new Promise((resolve) => setTimeout(resolve, first ? 0 : Math.floor(Math.random() * 16)));
        const [upsert, archive] = await Promise.all([
          lag(round % 2 === 0).then(() => postBulk(service, 'listings', key, { listings: [...rows].reverse() })),
          lag(round % 2 === 1).then(() => remove('listings', 'archive', key, { external_ids: names })),
        ]);
        expect(upsert.json()).toMatchObject({ inserted: 0, updated: 5, unchanged: 0, skipped: 0 });
        const archived = archive.json<{ archived: number; unchanged: number }>();
        const states = await stateOf('listings', account);
        const allArchived = states.every((s) => s.archived);
        const allActive = states.every((s) => !s.archived);
        // upsert then archive: the archive found them restored and archived them all; archive then
        // upsert: it found them archived, and the upsert restored them all
        if (allArchived) {
          expect(archived).toMatchObject({ archived: 5, unchanged: 0 });
          orders.upsertFirst += 1;
        } else {
          expect(allActive).toBe(true);
          expect(archived).toMatchObject({ archived: 0, unchanged: 5 });
          orders.archiveFirst += 1;
        }
      }
      expect(orders.upsertFirst + orders.archiveFirst).toBe(ROUNDS);
      // the two did meet in both orders: the rounds raced rather than ran one after the other
      expect(orders.upsertFirst).toBeGreaterThan(0);
      expect(orders.archiveFirst).toBeGreaterThan(0);
    });
  });

  describe('limits', () => {
    it('needs listings:write: 403 naming it, nothing done', async () => {
      const { key } = await newPartner(service, {}, ['jobs:read']);
      await listingsKit.expectRefused(() => remove('listings', 'delete', key, { external_ids: ['X'] }), 403, { error: 'Missing required scope: listings_write', code: 'missing_scope' });
    });

    it('counts against the day quota: 429 once it is spent', async () => {
      const { account, key } = await newPartner(service);
      await seed('listings', key, ['Q-1']);
      await service.deps.redis.set(`${service.config.redisPrefix}:quota-day:${account.id}`, '100000', 'KEEPTTL');
      const res = await remove('listings', 'archive', key, { external_ids: ['Q-1'] });
      expect(res.statusCode).toBe(429);
      expect(res.json()).toMatchObject({ error: 'Rate limit exceeded (per-day)', code: 'rate_limited_day' });
      expect(await stateOf('listings', account)).toEqual([{ external_id: 'Q-1', archived: false, moved: false }]);
    });
  });
});

describe('bulk-archive under ACCOUNT_MAX_IN_FLIGHT=1', () => {
  let service: TestService;

  beforeAll(async () => {
    // No worker: an import waits in the queue, holding its slot, until the test starts one.
    service = await startTestService({ worker: false, env: { ACCOUNT_MAX_IN_FLIGHT: '1', IMPORT_PICKUP_TIMEOUT_MS: '20000' } });
  });
  afterAll(async () => {
    await service?.close();
  });

  it('answers an archive while the account has an import in flight 429 "Too many concurrent requests"', async () => {
    const { key } = await newPartner(service);
    const running = postBulk(service, 'listings', key, { listings: [validListing({ external_id: 'C-1' })] });
    await expect.poll(async () => (await service.deps.queue.getJobCounts('waiting')).waiting, { timeout: 5_000 }).toBe(1);

    const refused = await service.request({ method: 'POST', url: '/v1/api/listings/bulk-archive', headers: bearer(key), payload: { external_ids: ['C-1'] } });

    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toEqual({ error: 'Too many concurrent requests', code: 'too_many_concurrent_requests', retry_after_sec: 1 });
    const done = await withLateWorker(service, async () => {
      expect((await running).statusCode).toBe(201);
      return service.request({ method: 'POST', url: '/v1/api/listings/bulk-archive', headers: bearer(key), payload: { external_ids: ['C-1'] } });
    });
    expect(done.statusCode).toBe(200);
    expect(done.json()).toMatchObject({ archived: 1 });
  });
});
