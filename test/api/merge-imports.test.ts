import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validListing, validMachine } from '../support/fixtures.js';
import { startBulkEndpoint, type StartedBulkEndpoint } from '../support/bulk-endpoint.js';

/**
 * `?update=merge` on the bulk routes (docs/catalogue.md#merge), through the API and a worker:
 * the parameter's refusals, a merge's answer and what it wrote, its import record, and an
 * Idempotency-Key that tells a merge from a replace.
 */
describe('POST /v1/api/listings/bulk?update=merge', () => {
  let kit: StartedBulkEndpoint;

  beforeAll(async () => {
    kit = await startBulkEndpoint('listings');
  });
  afterAll(async () => {
    await kit?.close();
  });

  const post = (key: string, query: string, payload: object, headers: Record<string, string> = {}) =>
    kit.service.request({ method: 'POST', url: `/v1/api/listings/bulk${query}`, headers: { authorization: `Bearer ${key}`, ...headers }, payload });

  it.each([['?update=patch'], ['?update='], ['?update=MERGE'], ['?update=merge&update=replace']])('refuses %s with 400 invalid_update, writing nothing', async (query) => {
    const { key } = await kit.partner();
    await kit.expectRefused(() => post(key, query, { listings: [validListing({ external_id: 'Q-1' })] }), 400, {
      error: 'update must be replace or merge',
      code: 'invalid_update',
    });
  });

  it('changes only the fields sent, creates a whole new row, fails a partial one, and answers 201 with each count', async () => {
    const { account, key } = await kit.partner();
    const created = await post(key, '', { listings: [validListing({ external_id: 'S-1', color: 'red', price_cents: 1_000 }), validListing({ external_id: 'S-2', color: 'blue' })] });
    expect(created.statusCode).toBe(201);

    const res = await post(key, '?update=merge', {
      listings: [{ external_id: 'S-1', price_cents: 1_250 }, { external_id: 'S-2', color: null }, validListing({ external_id: 'S-3' }), { external_id: 'S-4', price_cents: 1 }, { price_cents: 2 }],
    });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json<{ import_id: string; errors: { index: number; reason: string }[] }>();
    expect(body).toMatchObject({ inserted: 1, updated: 2, unchanged: 0, skipped: 2 });
    expect(body.errors.map((error) => [error.index, error.reason])).toEqual([
      [3, 'title: required; description: required; currency: required; category: required; material: required; photo_urls: required'],
      [4, 'external_id: required with update=merge'],
    ]);
    const rows = await kit.service.sql<{ external_id: string; color: string | null; price_cents: number }[]>`
      select external_id, color, price_cents from listings where account_id = ${account.id} order by external_id`;
    expect(rows.map((row) => [row.external_id, row.color, row.price_cents])).toEqual([
      ['S-1', 'red', 1_250],
      ['S-2', null, rows[1]!.price_cents],
      ['S-3', rows[2]!.color, rows[2]!.price_cents],
    ]);

    // the import reads back with the same counts, and lists both failures
    const read = await kit.service.request({ method: 'GET', url: `/v1/api/imports/${body.import_id}`, headers: { authorization: `Bearer ${key}` } });
    expect(read.json()).toMatchObject({ state: 'completed', rows: { received: 5, inserted: 1, updated: 2, unchanged: 0, skipped: 2 } });
    const errors = await kit.service.request({ method: 'GET', url: `/v1/api/imports/${body.import_id}/errors`, headers: { authorization: `Bearer ${key}` } });
    expect(errors.json<{ data: { index: number }[] }>().data.map((error) => error.index)).toEqual([3, 4]);
  });

  it('answers 400 no valid rows when no row can merge, up front', async () => {
    const { key } = await kit.partner();
    await kit.expectRefused(() => post(key, '?update=merge', { listings: [{ title: 'no id' }, { external_id: 'T-1', price_cents: -1 }] }), 400, {
      error: 'no valid rows',
      code: 'no_valid_rows',
      errors: [
        { index: 0, reason: 'external_id: required with update=merge', details: [{ field: 'external_id', code: 'required', message: 'required with update=merge' }] },
        { index: 1, external_id: 'T-1', reason: expect.stringMatching(/^price_cents: /) as unknown as string, details: [expect.objectContaining({ field: 'price_cents' })] },
      ],
    });
  });

  it('tells a merge from a replace under one Idempotency-Key: 422, and the merge replays its own result', async () => {
    const { key } = await kit.partner();
    await post(key, '', { listings: [validListing({ external_id: 'I-1' })] });
    // note: a whole row, which both modes take: the key, not the rows, tells them apart
    const payload = { listings: [validListing({ external_id: 'I-1', price_cents: 999 })] };
    const first = await post(key, '?update=merge', payload, { 'idempotency-key': 'merge-key-1' });
    expect(first.statusCode, first.body).toBe(201);
    const again = await post(key, '?update=merge', payload, { 'idempotency-key': 'merge-key-1' });
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
    const replace = await post(key, '', payload, { 'idempotency-key': 'merge-key-1' });
    expect(replace.statusCode).toBe(422);
  });

  it('merges machines too, through their own route', async () => {
    const { account, key } = await kit.partner();
    const machines = (query: string, payload: object) =>
      kit.service.request({ method: 'POST', url: `/v1/api/machines/bulk${query}`, headers: { authorization: `Bearer ${key}` }, payload });
    expect((await machines('', { machines: [validMachine({ external_id: 'K-1', nickname: 'Bertha' })] })).statusCode).toBe(201);
    const res = await machines('?update=merge', { machines: [{ external_id: 'K-1', nickname: null, capabilities: ['fdm'] }] });
    expect(res.json()).toMatchObject({ updated: 1, skipped: 0 });
    const [machine] = await kit.service.sql<{ nickname: string | null; capabilities: string[] }[]>`select nickname, capabilities from machines where account_id = ${account.id}`;
    expect(machine).toEqual({ nickname: null, capabilities: ['fdm'] });
  });
});
