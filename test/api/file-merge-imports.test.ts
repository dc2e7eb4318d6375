import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, validListing } from '../support/fixtures.js';
import { newPartner } from '../support/bulk-endpoint.js';
import { ndjson, readImport, uploadListingsFile } from '../support/file-imports.js';
import { startTestService, type TestService } from '../support/test-service.js';

/**
 * `POST /v1/api/imports?kind=...&update=merge` (docs/catalogue.md#merge): a whole file whose rows
 * change only the fields they carry, written by the workers chunk by chunk; the rows that can
 * neither merge nor be created fail there, and read back with the file's other failed rows.
 */
describe('POST /v1/api/imports?update=merge (whole files that merge)', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => {
    await service?.close();
  });

  const upload = (key: string, query: string, payload: string, contentType?: string, headers?: Record<string, string>) =>
    uploadListingsFile(service, key, query, payload, contentType, headers);
  const read = (key: string, id: string) => readImport<{ state: string; rows: Record<string, number>; error_count: number }>(service, key, id);
  const listingsOf = (accountId: string) =>
    service.sql<{ external_id: string; color: string | null; price_cents: number; title: string }[]>`
      select external_id, color, price_cents, title from listings where account_id = ${accountId} order by external_id`;

  it('refuses an update other than replace or merge with 400 invalid_update, before reading the file', async () => {
    const { key } = await newPartner(service, { tier: 'global' });
    const res = await upload(key, '&update=patch', ndjson([validListing({ external_id: 'A' })]));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'update must be replace or merge', code: 'invalid_update' });
  });

  it('merges an NDJSON file: fields sent change, null clears, a whole new row is created, a partial one fails by position', async () => {
    const { account, key } = await newPartner(service, { tier: 'global' });
    const bulk = await service.request({
      method: 'POST',
      url: '/v1/api/listings/bulk',
      headers: bearer(key),
      payload: { listings: [validListing({ external_id: 'F-1', color: 'red', price_cents: 100 }), validListing({ external_id: 'F-2', color: 'blue', price_cents: 200 })] },
    });
    expect(bulk.statusCode).toBe(201);

    const res = await upload(
      key,
      '&update=merge',
      ndjson([{ external_id: 'F-1', price_cents: 150 }, { external_id: 'F-2', color: null }, validListing({ external_id: 'F-3', title: 'New one' }), { external_id: 'F-4', price_cents: 1 }, { price_cents: 2 }]),
    );
    expect(res.statusCode, res.body).toBe(202);
    const { id } = res.json<{ import: { id: string } }>().import;
    // the row without an id fails up front; F-4 only once the workers find it names no row
    expect(res.json()).toMatchObject({ import: { rows: { received: 5, skipped: 1 } } });

    await expect.poll(async () => (await read(key, id)).state, { timeout: 15_000, interval: 50 }).toBe('completed');
    expect((await read(key, id)).rows).toMatchObject({ received: 5, processed: 5, inserted: 1, updated: 2, unchanged: 0, skipped: 2 });
    const errors = await service.request({ method: 'GET', url: `/v1/api/imports/${id}/errors`, headers: bearer(key) });
    expect(errors.json<{ data: { index: number; reason: string }[] }>().data.map((error) => [error.index, error.reason])).toEqual([
      [3, 'title: required; description: required; currency: required; category: required; material: required; photo_urls: required'],
      [4, 'external_id: required with update=merge'],
    ]);
    const rows = await listingsOf(account.id);
    expect(rows.map((row) => [row.external_id, row.color, row.price_cents])).toEqual([
      ['F-1', 'red', 150],
      ['F-2', null, 200],
      ['F-3', rows[2]!.color, rows[2]!.price_cents],
    ]);
    expect(rows[2]!.title).toBe('New one');
  });

  it('reads an empty CSV cell as a field not sent: only the cells given change', async () => {
    const { account, key } = await newPartner(service, { tier: 'global' });
    await service.request({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(key), payload: { listings: [validListing({ external_id: 'C-1', color: 'red', price_cents: 100, title: 'Kept title' })] } });
    const res = await upload(key, '&update=merge', 'external_id,price_cents,color\nC-1,,green\n', 'text/csv');
    expect(res.statusCode, res.body).toBe(202);
    const { id } = res.json<{ import: { id: string } }>().import;
    await expect.poll(async () => (await read(key, id)).state, { timeout: 15_000, interval: 50 }).toBe('completed');
    expect(await listingsOf(account.id)).toEqual([{ external_id: 'C-1', color: 'green', price_cents: 100, title: 'Kept title' }]);
  });

  it('tells a merge file from the same file replaced under one Idempotency-Key: 422', async () => {
    const { key } = await newPartner(service, { tier: 'global' });
    const file = ndjson([validListing({ external_id: 'K-1' })]);
    const first = await upload(key, '&update=merge', file, 'application/x-ndjson', { 'idempotency-key': 'file-merge-1' });
    expect(first.statusCode, first.body).toBe(202);
    const replay = await upload(key, '&update=merge', file, 'application/x-ndjson', { 'idempotency-key': 'file-merge-1' });
    expect(replay.statusCode).toBe(202);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    const replace = await upload(key, '', file, 'application/x-ndjson', { 'idempotency-key': 'file-merge-1' });
    expect(replace.statusCode).toBe(422);
  });
});
