import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ImportKind } from '../../src/shared/import/import-kinds.js';
import { bearer, validListing, validMachine } from '../support/fixtures.js';
import { startTestService, type TestAccount, type TestService } from '../support/test-service.js';
import { newPartner, postBulk } from '../support/bulk-endpoint.js';

const row = (kind: ImportKind, overrides: Record<string, unknown> = {}) => (kind === 'listings' ? validListing(overrides) : validMachine(overrides));
/** A row that fails its checks. */
const badRow = (kind: ImportKind, externalId: string) =>
  kind === 'listings' ? validListing({ external_id: externalId, currency: 'EUR' }) : validMachine({ external_id: externalId, model: ' ' });
/** The field a test changes to make an upsert an update. */
const changedField = (kind: ImportKind) => (kind === 'listings' ? 'title' : 'nickname');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/**
 * `?return=rows` (docs/catalogue.md#rows-and-their-ids): each valid row's id and outcome, in
 * request order, on both bulk endpoints, their merges, archives and deletes, dry runs and replays,
 * through the real API and worker.
 */
describe.each(['listings', 'machines'] as const)('POST /v1/api/%s/bulk?return=rows', (kind) => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => {
    await service?.close();
  });

  const post = (key: string, path: string, payload: object, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> =>
    service.request({ method: 'POST', url: `/v1/api/${kind}/${path}`, headers: { ...bearer(key), ...headers }, payload });

  /** The account's rows by external_id: id and whether archived. */
  async function stored(account: TestAccount): Promise<Map<string | null, { id: string; archived: boolean }[]>> {
    const rows = await service.sql<{ id: string; external_id: string | null; archived: boolean }[]>`
      select id::text as id, external_id, archived_at is not null as archived from ${service.sql(kind)} where account_id = ${account.id} order by id`;
    const byExternalId = new Map<string | null, { id: string; archived: boolean }[]>();
    for (const r of rows) byExternalId.set(r.external_id, [...(byExternalId.get(r.external_id) ?? []), { id: r.id, archived: r.archived }]);
    return byExternalId;
  }
  const idOf = async (account: TestAccount, externalId: string) => (await stored(account)).get(externalId)![0]!.id;

  async function keptOutcomes(importId: string): Promise<number> {
    const [kept] = await service.sql<{ n: number }[]>`select count(*)::int as n from import_row_outcomes where job_id = ${importId}`;
    return kept!.n;
  }

  it('names each valid row\'s id and outcome in request order: inserted, updated, unchanged, a restored archived row updated; failed rows only in errors', async () => {
    const { account, key } = await newPartner(service);
    const seeded = ['KEEP', 'CHANGE', 'GONE'].map((id) => row(kind, { external_id: id }));
    expect((await postBulk(service, kind, key, { [kind]: seeded })).statusCode).toBe(201);
    expect((await post(key, 'bulk-archive', { external_ids: ['GONE'] })).statusCode).toBe(200);
    const [keep, change, gone] = [await idOf(account, 'KEEP'), await idOf(account, 'CHANGE'), await idOf(account, 'GONE')];

    const response = await post(key, 'bulk?return=rows', {
      [kind]: [
        row(kind, { external_id: 'NEW' }),
        badRow(kind, 'BAD'),
        { ...seeded[1], [changedField(kind)]: 'Changed' },
        seeded[0],
        row(kind),
        seeded[2],
      ],
    });
    expect(response.statusCode).toBe(201);
    const body = response.json();
    expect(body).toMatchObject({ inserted: 2, updated: 2, unchanged: 1, skipped: 1 });
    expect(body.errors.map((e: { index: number }) => e.index)).toEqual([1]);
    const after = await stored(account);
    const unnamed = after.get(null)!;
    expect(unnamed).toHaveLength(1);
    expect(body.rows).toEqual([
      { index: 0, id: after.get('NEW')![0]!.id, external_id: 'NEW', outcome: 'inserted' },
      { index: 2, id: change, external_id: 'CHANGE', outcome: 'updated' },
      { index: 3, id: keep, external_id: 'KEEP', outcome: 'unchanged' },
      { index: 4, id: unnamed[0]!.id, external_id: null, outcome: 'inserted' },
      { index: 5, id: gone, external_id: 'GONE', outcome: 'updated' },
    ]);
    expect(after.get('GONE')).toEqual([{ id: gone, archived: false }]);
    expect(Object.keys(body)).toEqual(['inserted', 'updated', 'unchanged', 'skipped', 'errors', 'rows', 'import_id']);
  });

  it('answers rows for an import whose rows carry no external_id, every one inserted', async () => {
    const { account, key } = await newPartner(service);
    const response = await post(key, 'bulk?return=rows', { [kind]: [row(kind), badRow(kind, 'X'), row(kind)] });
    expect(response.statusCode).toBe(201);
    const ids = (await stored(account)).get(null)!.map((r) => r.id);
    expect(response.json().rows).toEqual([
      { index: 0, id: expect.stringMatching(UUID), external_id: null, outcome: 'inserted' },
      { index: 2, id: expect.stringMatching(UUID), external_id: null, outcome: 'inserted' },
    ]);
    expect(response.json().rows.map((r: { id: string }) => r.id).sort()).toEqual([...ids].sort());
  });

  it('answers without the parameter exactly as before and keeps nothing beside the import', async () => {
    const { key } = await newPartner(service);
    const response = await postBulk(service, kind, key, { [kind]: [row(kind, { external_id: 'A' }), badRow(kind, 'B')] });
    expect(response.statusCode).toBe(201);
    expect(Object.keys(response.json())).toEqual(['inserted', 'updated', 'unchanged', 'skipped', 'errors', 'import_id']);
    expect(await keptOutcomes(response.json().import_id)).toBe(0);
    const asked = await post(key, 'bulk?return=rows', { [kind]: [row(kind, { external_id: 'A' })] });
    expect(await keptOutcomes(asked.json().import_id)).toBe(1);
  });

  it('merges: updated, unchanged and created rows with their ids; a row that can neither merge nor be created is in errors only', async () => {
    const { account, key } = await newPartner(service);
    await postBulk(service, kind, key, { [kind]: ['M-1', 'M-2'].map((id) => row(kind, { external_id: id })) });
    const response = await post(key, 'bulk?update=merge&return=rows', {
      [kind]: [
        { external_id: 'M-2', [changedField(kind)]: 'Merged' },
        { external_id: 'M-NONE', [changedField(kind)]: 'No such row' },
        row(kind, { external_id: 'M-NEW' }),
        { external_id: 'M-1' },
      ],
    });
    expect(response.statusCode).toBe(201);
    const body = response.json();
    expect(body).toMatchObject({ inserted: 1, updated: 1, unchanged: 1, skipped: 1 });
    expect(body.errors.map((e: { index: number }) => e.index)).toEqual([1]);
    expect(body.rows).toEqual([
      { index: 0, id: await idOf(account, 'M-2'), external_id: 'M-2', outcome: 'updated' },
      { index: 2, id: await idOf(account, 'M-NEW'), external_id: 'M-NEW', outcome: 'inserted' },
      { index: 3, id: await idOf(account, 'M-1'), external_id: 'M-1', outcome: 'unchanged' },
    ]);
  });

  it('archives and deletes: archived, unchanged and deleted entries with their rows\' ids and external_ids, by external_ids or ids', async () => {
    const { account, key } = await newPartner(service);
    await postBulk(service, kind, key, { [kind]: ['R-1', 'R-2', 'R-3'].map((id) => row(kind, { external_id: id })) });
    const [r1, r2, r3] = [await idOf(account, 'R-1'), await idOf(account, 'R-2'), await idOf(account, 'R-3')];
    await post(key, 'bulk-archive', { external_ids: ['R-2'] });

    const archive = await post(key, 'bulk-archive?return=rows', { ids: [r2, 'not-an-id', r1] });
    expect(archive.statusCode).toBe(200);
    expect(archive.json()).toMatchObject({ archived: 1, unchanged: 1, skipped: 1 });
    expect(archive.json().rows).toEqual([
      { index: 0, id: r2, external_id: 'R-2', outcome: 'unchanged' },
      { index: 2, id: r1, external_id: 'R-1', outcome: 'archived' },
    ]);
    expect(Object.keys(archive.json())).toEqual(['archived', 'unchanged', 'skipped', 'errors', 'rows', 'import_id']);

    const deleted = await post(key, 'bulk-delete?return=rows', { external_ids: ['R-3', 'NOPE', 'R-1'] });
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json().rows).toEqual([
      { index: 0, id: r3, external_id: 'R-3', outcome: 'deleted' },
      { index: 2, id: r1, external_id: 'R-1', outcome: 'deleted' },
    ]);
    expect((await stored(account)).has('R-3')).toBe(false);

    const plain = await post(key, 'bulk-delete', { external_ids: ['R-2'] });
    expect(Object.keys(plain.json())).toEqual(['deleted', 'skipped', 'errors', 'import_id']);
  });

  it('answers a dry run with what would happen, no id for a would-be insert, and changes nothing', async () => {
    const { account, key } = await newPartner(service);
    const seeded = ['D-1', 'D-2'].map((id) => row(kind, { external_id: id }));
    await postBulk(service, kind, key, { [kind]: seeded });
    const [d1, d2] = [await idOf(account, 'D-1'), await idOf(account, 'D-2')];
    const before = await stored(account);

    const upsert = await post(key, 'bulk?dry_run=true&return=rows', {
      [kind]: [row(kind, { external_id: 'D-NEW' }), { ...seeded[0], [changedField(kind)]: 'Would change' }, seeded[1]],
    });
    expect(upsert.statusCode).toBe(200);
    expect(upsert.json()).toMatchObject({ dry_run: true, inserted: 1, updated: 1, unchanged: 1 });
    expect(upsert.json().rows).toEqual([
      { index: 0, id: null, external_id: 'D-NEW', outcome: 'inserted' },
      { index: 1, id: d1, external_id: 'D-1', outcome: 'updated' },
      { index: 2, id: d2, external_id: 'D-2', outcome: 'unchanged' },
    ]);

    const merge = await post(key, 'bulk?dry_run=true&update=merge&return=rows', { [kind]: [row(kind, { external_id: 'D-NEW' }), { external_id: 'D-2' }] });
    expect(merge.json().rows).toEqual([
      { index: 0, id: null, external_id: 'D-NEW', outcome: 'inserted' },
      { index: 1, id: d2, external_id: 'D-2', outcome: 'unchanged' },
    ]);

    const archive = await post(key, 'bulk-archive?dry_run=true&return=rows', { external_ids: ['D-2'] });
    expect(archive.json()).toMatchObject({ dry_run: true, rows: [{ index: 0, id: d2, external_id: 'D-2', outcome: 'archived' }] });
    const del = await post(key, 'bulk-delete?dry_run=true&return=rows', { external_ids: ['D-1'] });
    expect(del.json()).toMatchObject({ dry_run: true, rows: [{ index: 0, id: d1, external_id: 'D-1', outcome: 'deleted' }] });

    expect(await stored(account)).toEqual(before);
  });

  it('replays the same rows for an Idempotency-Key repeat, long after the rows changed; the key with or without return=rows is another request (422)', async () => {
    const { key } = await newPartner(service);
    const payload = { [kind]: [row(kind, { external_id: 'I-1' }), badRow(kind, 'I-BAD'), row(kind, { external_id: 'I-2' })] };
    const first = await post(key, 'bulk?return=rows', payload, { 'idempotency-key': 'rows-1' });
    expect(first.statusCode).toBe(201);
    // note: a later import changes what the rows are; the replay answers what the first one did
    await postBulk(service, kind, key, { [kind]: [row(kind, { external_id: 'I-1', [changedField(kind)]: 'Later' })] });
    const replay = await post(key, 'bulk?return=rows', payload, { 'idempotency-key': 'rows-1' });
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(first.json());
    expect(first.json().rows.map((r: { outcome: string }) => r.outcome)).toEqual(['inserted', 'inserted']);

    const without = await post(key, 'bulk', payload, { 'idempotency-key': 'rows-1' });
    expect(without.statusCode).toBe(422);
    const plainFirst = await post(key, 'bulk', payload, { 'idempotency-key': 'rows-2' });
    expect(plainFirst.statusCode).toBe(201);
    expect((await post(key, 'bulk?return=rows', payload, { 'idempotency-key': 'rows-2' })).statusCode).toBe(422);

    const archive = await post(key, 'bulk-delete?return=rows', { external_ids: ['I-2'] }, { 'idempotency-key': 'rows-3' });
    const archiveReplay = await post(key, 'bulk-delete?return=rows', { external_ids: ['I-2'] }, { 'idempotency-key': 'rows-3' });
    expect(archiveReplay.headers['idempotent-replayed']).toBe('true');
    expect(archiveReplay.json()).toEqual(archive.json());
    expect(archive.json().rows).toEqual([{ index: 0, id: expect.stringMatching(UUID), external_id: 'I-2', outcome: 'deleted' }]);
  });

  it.each([
    ['bulk?return=ids', 'the bulk endpoint'],
    ['bulk?return=', 'an empty value'],
    ['bulk?return=rows&return=rows', 'the parameter twice'],
    ['bulk-archive?return=ROWS', 'an archive'],
    ['bulk-delete?return=all', 'a delete'],
  ])('refuses %s (%s) with 400 invalid_return, before the body is read', async (path) => {
    const { key } = await newPartner(service);
    const response = await post(key, path, { [kind]: [row(kind)], external_ids: ['A'] });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: 'return must be rows', code: 'invalid_return' });
  });

  it('is an unknown parameter on a file import', async () => {
    const { key } = await newPartner(service);
    const response = await service.request({
      method: 'POST',
      url: `/v1/api/imports?kind=${kind}&return=rows`,
      headers: { ...bearer(key), 'content-type': 'application/x-ndjson' },
      payload: `${JSON.stringify(row(kind))}\n`,
    });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ error: 'Unknown query parameter: return', code: 'unknown_query_parameter' });
  });
});
