import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeImportRows } from '../../src/shared/import/rows-hand-over.js';
import { ListingRowSchema } from '../../src/shared/rows/listing-row.js';
import { writeFileChunk } from '../../src/worker/write-file-chunk.js';
import { writeImport, type ImportWrite } from '../../src/worker/write-import.js';
import { bearer, validListing } from '../support/fixtures.js';
import { newPartner } from '../support/bulk-endpoint.js';
import { ndjson, readImport, uploadListingsFile } from '../support/file-imports.js';
import { startTestService, type TestService } from '../support/test-service.js';
import type { TestAccount } from '../support/test-service.js';

/**
 * `POST /v1/api/imports?kind=...&mode=mirror` (docs/catalogue.md#mirror): a file that is the whole
 * catalogue. Once it is written, what it left out is archived (or deleted), behind the guard; a
 * failed line keeps its row, an unreadable line or a truncated file holds the removal.
 */
describe('POST /v1/api/imports?mode=mirror (a file that mirrors the catalogue)', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => {
    await service?.close();
  });

  const upload = (key: string, query: string, payload: string, contentType?: string) => uploadListingsFile(service, key, query, payload, contentType);
  interface ImportRead {
    state: string;
    mode: string;
    removal: { missing: string; max_removal: number; state: string; rows: number } | null;
    rows: Record<string, number>;
  }
  const read = (key: string, id: string) => readImport<ImportRead>(service, key, id);
  const ids = (prefix: string, count: number) => Array.from({ length: count }, (_, n) => `${prefix}-${n}`);

  /** A partner with `count` listings that carry ids `<prefix>-0...`, and two without. */
  async function catalogue(prefix: string, count: number): Promise<{ account: TestAccount; key: string }> {
    const partner = await newPartner(service, { tier: 'global' });
    const res = await service.request({
      method: 'POST',
      url: '/v1/api/listings/bulk',
      headers: bearer(partner.key),
      payload: { listings: [...ids(prefix, count).map((id) => validListing({ external_id: id })), validListing(), validListing()] },
    });
    expect(res.statusCode, res.body).toBe(201);
    return partner;
  }

  /** Uploads a mirror and waits for it to end; its import as read then. */
  async function mirror(key: string, query: string, payload: string): Promise<ImportRead & { id: string }> {
    const res = await upload(key, `&mode=mirror${query}`, payload);
    expect(res.statusCode, res.body).toBe(202);
    // note: the 202's import, as created; a read right after it may already find a small file written.
    const { id, removal } = res.json<{ import: { id: string; removal: ImportRead['removal'] } }>().import;
    expect(removal).toMatchObject({ state: 'pending', rows: 0 });
    await expect.poll(async () => (await read(key, id)).state, { timeout: 15_000, interval: 50 }).toBe('completed');
    return { id, ...(await read(key, id)) };
  }

  const rowsOf = (account: TestAccount) =>
    service.sql<{ external_id: string | null; archived: boolean }[]>`
      select external_id, archived_at is not null as archived from listings where account_id = ${account.id} order by external_id nulls last`;
  const archivedIds = async (account: TestAccount) => (await rowsOf(account)).filter((row) => row.archived).map((row) => row.external_id);

  it.each([
    ['&mode=replace', 'mode must be upsert or mirror', 'invalid_mode'],
    ['&mode=mirror&missing=drop', 'missing must be archive or delete', 'invalid_missing'],
    ['&mode=mirror&max_removal=101', 'max_removal must be a whole number from 0 to 100', 'invalid_max_removal'],
    ['&mode=mirror&max_removal=5.5', 'max_removal must be a whole number from 0 to 100', 'invalid_max_removal'],
    ['&missing=delete', 'missing and max_removal apply only with mode=mirror', 'removal_without_mirror'],
    ['&mode=upsert&max_removal=20', 'missing and max_removal apply only with mode=mirror', 'removal_without_mirror'],
  ])('refuses %s with 400 naming the parameter, keeping nothing', async (query, error, code) => {
    const { account, key } = await newPartner(service, { tier: 'global' });
    const res = await upload(key, query, ndjson([validListing({ external_id: 'A' })]));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error, code });
    expect((await service.sql`select 1 from imports where account_id = ${account.id}`).length).toBe(0);
  });

  it('archives what the file left out once it is written, never a row without an external_id, and reads it back', async () => {
    const { account, key } = await catalogue('A', 20);
    const done = await mirror(key, '', ndjson(ids('A', 19).map((id) => validListing({ external_id: id }))));
    expect(done).toMatchObject({ mode: 'mirror', removal: { missing: 'archive', max_removal: 10, state: 'done', rows: 1 }, rows: { archived: 1, deleted: 0 } });
    expect(await archivedIds(account)).toEqual(['A-19']);
    expect((await rowsOf(account)).filter((row) => row.external_id === null)).toEqual([
      { external_id: null, archived: false },
      { external_id: null, archived: false },
    ]);
  });

  it('keeps the row of a line that failed its checks: its external_id appears', async () => {
    const { account, key } = await catalogue('B', 20);
    const lines = ids('B', 20).map((id) => validListing({ external_id: id, ...(id === 'B-7' ? { price_cents: -5 } : {}) }));
    const done = await mirror(key, '', ndjson(lines.slice(0, 19)));
    expect(done.rows).toMatchObject({ skipped: 1, archived: 1 });
    expect(await archivedIds(account)).toEqual(['B-19']);
  });

  it('holds the removal of a truncated file (more than max_removal percent): nothing removed, the import still completed', async () => {
    const { account, key } = await catalogue('C', 20);
    const held = await mirror(key, '', ndjson(ids('C', 12).map((id) => validListing({ external_id: id }))));
    expect(held).toMatchObject({ state: 'completed', removal: { state: 'held', rows: 8 }, rows: { archived: 0 } });
    expect(await archivedIds(account)).toEqual([]);
    // the same file with a guard wide enough removes them
    const wide = await mirror(key, '&max_removal=40', ndjson(ids('C', 12).map((id) => validListing({ external_id: id }))));
    expect(wide.removal).toMatchObject({ max_removal: 40, state: 'done', rows: 8 });
    expect((await archivedIds(account)).length).toBe(8);
  });

  it('counts the catalogue the file replaces, never the file\'s own new rows: 100 rows and a file of 900 new ids is held', async () => {
    const { account, key } = await catalogue('N', 100);
    const held = await mirror(key, '', ndjson(ids('NEW', 900).map((id) => validListing({ external_id: id }))));
    expect(held).toMatchObject({ state: 'completed', removal: { state: 'held', rows: 100 }, rows: { inserted: 900, archived: 0 } });
    expect(await archivedIds(account)).toEqual([]);
  });

  it('holds the removal when a line could not be read, however small the removal', async () => {
    const { account, key } = await catalogue('D', 20);
    const held = await mirror(key, '&max_removal=100', ndjson(ids('D', 19).map((id) => validListing({ external_id: id }))) + '{"external_id": "D-19", broken\n');
    expect(held.removal).toMatchObject({ state: 'held', rows: 1 });
    expect(await archivedIds(account)).toEqual([]);
  });

  it('holds a CSV mirror with a record whose cell count differs from the header', async () => {
    const { key } = await catalogue('E', 3);
    const csv = 'external_id,title,description,price_cents,currency,category,material,photo_urls\n' +
      ['E-0', 'E-1'].map((id) => `${id},Lamp,A lamp,100,USD,home_decor,PLA,https://cdn.example.com/a.jpg`).join('\n') + '\nE-2,Lamp\n';
    const res = await upload(key, '&mode=mirror&max_removal=100', csv, 'text/csv');
    expect(res.statusCode, res.body).toBe(202);
    const { id } = res.json<{ import: { id: string } }>().import;
    await expect.poll(async () => (await read(key, id)).state, { timeout: 15_000, interval: 50 }).toBe('completed');
    expect((await read(key, id)).removal).toMatchObject({ state: 'held' });
  });

  it('deletes with missing=delete, archived rows the file left out included; their external_ids are free again', async () => {
    const { account, key } = await catalogue('F', 10);
    await service.sql`update listings set archived_at = now() - interval '1 day' where account_id = ${account.id} and external_id = 'F-9'`;
    const done = await mirror(key, '&missing=delete&max_removal=30', ndjson(ids('F', 8).map((id) => validListing({ external_id: id }))));
    expect(done).toMatchObject({ removal: { missing: 'delete', state: 'done', rows: 2 }, rows: { deleted: 2, archived: 0 } });
    expect((await rowsOf(account)).map((row) => row.external_id)).toEqual([...ids('F', 8), null, null]);
  });

  it('turns the percentage off with max_removal=100 even when the catalogue it replaces has no active row: the archived rows left out are deleted; under the default guard they are held', async () => {
    const held = await catalogue('H', 3);
    await service.sql`update listings set archived_at = now() - interval '1 day' where account_id = ${held.account.id} and external_id is not null`;
    const kept = await mirror(held.key, '&missing=delete', ndjson([validListing({ external_id: 'H-new' })]));
    expect(kept.removal).toMatchObject({ state: 'held', rows: 3 });

    const off = await catalogue('J', 3);
    await service.sql`update listings set archived_at = now() - interval '1 day' where account_id = ${off.account.id} and external_id is not null`;
    const done = await mirror(off.key, '&missing=delete&max_removal=100', ndjson([validListing({ external_id: 'J-new' })]));
    expect(done).toMatchObject({ removal: { state: 'done', rows: 3 }, rows: { deleted: 3 } });
    expect((await rowsOf(off.account)).map((row) => row.external_id)).toEqual(['J-new', null, null]);
  });

  it('counts a row restored by the mirror itself as present: an archived row in the file comes back', async () => {
    const { account, key } = await catalogue('G', 10);
    await service.sql`update listings set archived_at = now() - interval '1 day' where account_id = ${account.id} and external_id = 'G-0'`;
    const done = await mirror(key, '', ndjson(ids('G', 10).map((id) => validListing({ external_id: id }))));
    expect(done).toMatchObject({ removal: { state: 'done', rows: 0 }, rows: { archived: 0 } });
    expect(await archivedIds(account)).toEqual([]);
  });
});

/**
 * A mirror beside the other writes of its account, with no worker: the test writes the chunks and
 * the other imports itself (the workers' own functions), in the order it needs.
 */
describe('a mirror\'s removal beside other imports and a cancel', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
  });
  afterAll(async () => {
    await service?.close();
  });

  const ndjson = (rows: object[]) => rows.map((row) => JSON.stringify(row)).join('\n') + '\n';
  const listingsJob = (accountId: string, rows: object[]): ImportWrite => ({
    importId: randomUUID(), kind: 'listings', accountId, requestId: 'mirror-race', total: rows.length, errors: [], rowCount: rows.length,
    rows: encodeImportRows(rows.map((row) => ListingRowSchema.parse(row))), matchExternalIds: true,
  });
  const archivedIds = async (accountId: string) =>
    (await service.sql<{ external_id: string }[]>`select external_id from listings where account_id = ${accountId} and archived_at is not null order by external_id`).map((row) => row.external_id);

  async function mirrorUpload(key: string, ids: string[]): Promise<string> {
    const res = await service.request({
      method: 'POST', url: '/v1/api/imports?kind=listings&mode=mirror&max_removal=100',
      headers: { ...bearer(key), 'content-type': 'application/x-ndjson' }, payload: ndjson(ids.map((id) => validListing({ external_id: id }))),
    });
    expect(res.statusCode, res.body).toBe(202);
    return res.json<{ import: { id: string } }>().import.id;
  }

  it('keeps a row another import wrote after the upload began, and one it was writing when the removal came; removes the rest once', async () => {
    const { account, key } = await newPartner(service, { tier: 'global' });
    const ids = Array.from({ length: 10 }, (_, n) => `R-${n}`);
    await writeImport(service.sql, listingsJob(account.id, ids.map((id) => validListing({ external_id: id }))));
    const importId = await mirrorUpload(key, ids.slice(0, 5));

    // after the upload began: R-5 changed and R-new created by bulk imports
    await writeImport(service.sql, listingsJob(account.id, [validListing({ external_id: 'R-5', title: 'Changed since' }), validListing({ external_id: 'R-new' })]));
    // R-6 being written, its transaction open, when the removal comes
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const holding = writeImport(service.sql, listingsJob(account.id, [validListing({ external_id: 'R-6', title: 'Written meanwhile' })]), { beforeCommit: () => held });
    await expect.poll(async () => (await service.sql`select 1 from listings where account_id = ${account.id} and external_id = 'R-6' and xmax <> 0`).length, { timeout: 5_000 }).toBe(1);

    const completing = (async () => {
      for (let step = 0; step < 10; step += 1) if ((await writeFileChunk(service.sql, importId)).state === 'completed') return;
      throw new Error('the mirror did not complete');
    })();
    // the removal waits for R-6's lock
    await expect
      .poll(async () => (await service.sql`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`).length, { timeout: 5_000 })
      .toBe(1);
    release();
    await holding;
    await completing;

    expect(await archivedIds(account.id)).toEqual(['R-7', 'R-8', 'R-9']);
    const [record] = await service.sql<{ removal_state: string; removal_rows: number; archived: number }[]>`
      select removal_state, removal_rows, archived from imports where job_id = ${importId}`;
    expect(record).toEqual({ removal_state: 'done', removal_rows: 3, archived: 3 });
  });

  it('removes nothing for a cancelled mirror: its removal reads skipped', async () => {
    const { account, key } = await newPartner(service, { tier: 'global' });
    const ids = Array.from({ length: 6 }, (_, n) => `Q-${n}`);
    await writeImport(service.sql, listingsJob(account.id, ids.map((id) => validListing({ external_id: id }))));
    const importId = await mirrorUpload(key, ids.slice(0, 2));
    const cancelled = await service.request({ method: 'POST', url: `/v1/api/imports/${importId}/cancel`, headers: bearer(key) });
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    expect(cancelled.json()).toMatchObject({ state: 'cancelled', mode: 'mirror', removal: { state: 'skipped', rows: 0 } });
    // a worker that comes later finds it ended, and removes nothing
    expect((await writeFileChunk(service.sql, importId)).state).toBe('ended');
    expect(await archivedIds(account.id)).toEqual([]);
  });
});
