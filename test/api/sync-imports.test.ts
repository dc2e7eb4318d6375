import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LARGE_FROM_BYTES } from '../../src/api/import/import-preparer.js';
import type { ImportKind } from '../../src/shared/import/import-kinds.js';
import { bearer, validListing, validMachine } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { newPartner, postBulk, storedFor } from '../support/bulk-endpoint.js';

const validRow = (kind: ImportKind, overrides: Record<string, unknown> = {}) => (kind === 'listings' ? validListing(overrides) : validMachine(overrides));

/**
 * A partner's nightly sync over HTTP: rows matched on `external_id` (docs/rows.md#external-id)
 * and the server's dry run (docs/endpoints.md#dry-run), on both bulk endpoints.
 */
describe.each(['listings', 'machines'] as const)('syncing %s by external_id', (kind) => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => {
    await service?.close();
  });

  const dryRun = (key: string, payload: object, query = 'dry_run=true', headers: Record<string, string> = {}) =>
    service.request({ method: 'POST', url: `/v1/api/${kind}/bulk?${query}`, headers: { ...bearer(key), ...headers }, payload });

  it('answers exactly {inserted, skipped, errors} when no row carries external_id', async () => {
    const { key } = await newPartner(service);
    const response = await postBulk(service, kind, key, { [kind]: [validRow(kind), validRow(kind)] });
    expect(response.statusCode).toBe(201);
    expect(Object.keys(response.json())).toEqual(['inserted', 'skipped', 'errors', 'import_id']);
  });

  it('creates, then updates in place, then leaves alone: a second run of the same file doubles nothing', async () => {
    const { account, key } = await newPartner(service);
    const rows = Array.from({ length: 6 }, (_, i) => validRow(kind, { external_id: `SKU-${i}` }));

    const first = await postBulk(service, kind, key, { [kind]: rows });
    expect(first.statusCode).toBe(201);
    expect(first.json()).toEqual({ inserted: 6, updated: 0, unchanged: 0, skipped: 0, errors: [], import_id: expect.any(String) });

    const same = await postBulk(service, kind, key, { [kind]: rows });
    expect(same.json()).toEqual({ inserted: 0, updated: 0, unchanged: 6, skipped: 0, errors: [], import_id: expect.any(String) });

    const changed = rows.map((row, i) => (i < 3 ? { ...row, [kind === 'listings' ? 'title' : 'nickname']: `Changed ${i}` } : row));
    const third = await postBulk(service, kind, key, { [kind]: [...changed, validRow(kind)] });
    expect(third.json()).toEqual({ inserted: 1, updated: 3, unchanged: 3, skipped: 0, errors: [], import_id: expect.any(String) });
    expect((await storedFor(service, account))[kind]).toBe(7);
  });

  it('trims the id: " SKU-1 " and "SKU-1" are the same row', async () => {
    const { account, key } = await newPartner(service);
    await postBulk(service, kind, key, { [kind]: [validRow(kind, { external_id: 'SKU-1' })] });
    const again = await postBulk(service, kind, key, { [kind]: [validRow(kind, { external_id: '  SKU-1 ' })] });
    expect(again.json()).toMatchObject({ inserted: 0, updated: 1 });
    expect((await storedFor(service, account))[kind]).toBe(1);
  });

  it('counts a failing row among the rows sent: inserted + updated + unchanged + skipped is the rows sent', async () => {
    const { key } = await newPartner(service);
    const good = validRow(kind, { external_id: 'A' });
    await postBulk(service, kind, key, { [kind]: [good] });
    const bad = kind === 'listings' ? validListing({ external_id: 'B', currency: 'EUR' }) : validMachine({ external_id: 'B', model: ' ' });
    const response = await postBulk(service, kind, key, { [kind]: [good, bad, validRow(kind, { external_id: 'C' })] });
    const body = response.json();
    expect(body).toMatchObject({ inserted: 1, updated: 0, unchanged: 1, skipped: 1 });
    expect(body.inserted + body.updated + body.unchanged + body.skipped).toBe(3);
  });

  it('refuses an external_id that is blank, too long, not a string or holds control characters, as a row error', async () => {
    const { key } = await newPartner(service);
    const response = await postBulk(service, kind, key, {
      [kind]: [
        validRow(kind, { external_id: '   ' }),
        validRow(kind, { external_id: 'x'.repeat(101) }),
        validRow(kind, { external_id: 42 }),
        validRow(kind, { external_id: 'SKU\u001b[2J' }),
        validRow(kind, { external_id: 'y'.repeat(100) }),
        validRow(kind, { external_id: null }),
      ],
    });
    expect(response.statusCode).toBe(201);
    const body = response.json();
    expect(body).toMatchObject({ inserted: 2, updated: 0, unchanged: 0, skipped: 4 });
    expect(body.errors.map((e: { index: number; reason: string }) => [e.index, e.reason])).toEqual([
      [0, 'external_id: must not be blank'],
      [1, 'external_id: must be at most 100 characters'],
      [2, 'external_id: must be a string'],
      [3, 'external_id: must not contain control characters'],
    ]);
  });

  it('uses the first of a repeated external_id and fails each later one, valid or not', async () => {
    const { account, key } = await newPartner(service);
    const broken = kind === 'listings' ? { currency: 'EUR' } : { model: ' ' };
    const response = await postBulk(service, kind, key, {
      [kind]: [
        validRow(kind, { external_id: 'DUP' }),
        validRow(kind, { external_id: ' DUP ' }),
        validRow(kind, { external_id: 'BROKEN-FIRST', ...broken }),
        validRow(kind, { external_id: 'BROKEN-FIRST' }),
        validRow(kind, { external_id: 'DUP', ...broken }),
        validRow(kind, { external_id: 'ONCE' }),
      ],
    });
    expect(response.statusCode).toBe(201);
    const body = response.json();
    const brokenReason = kind === 'listings' ? 'currency: must be exactly USD' : 'model: required';
    expect(body).toMatchObject({ inserted: 2, updated: 0, unchanged: 0, skipped: 4 });
    expect(body.errors.map((e: { index: number; external_id?: string; reason: string }) => [e.index, e.external_id, e.reason])).toEqual([
      [1, 'DUP', 'external_id: appears more than once in this request'],
      [2, 'BROKEN-FIRST', brokenReason],
      [3, 'BROKEN-FIRST', 'external_id: appears more than once in this request'],
      [4, 'DUP', `external_id: appears more than once in this request; ${brokenReason}`],
    ]);
    expect((await storedFor(service, account))[kind]).toBe(2);
  });

  it('refuses a request whose only valid rows repeat an earlier id with the no-valid-rows 400, and writes nothing', async () => {
    const { account, key } = await newPartner(service);
    const broken = kind === 'listings' ? { currency: 'EUR' } : { model: ' ' };
    const response = await postBulk(service, kind, key, { [kind]: [validRow(kind, { external_id: 'X', ...broken }), validRow(kind, { external_id: 'X' })] });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ error: 'no valid rows', code: 'no_valid_rows' });
    expect(response.json().errors.map((e: { external_id?: string }) => e.external_id)).toEqual(['X', 'X']);
    expect(await storedFor(service, account)).toEqual({ listings: 0, machines: 0, imports: 0, idempotencyKeys: 0 });
  });

  it('lets parallel imports of overlapping rows race: every one answers 201, no row is written twice', async () => {
    const { account, key } = await newPartner(service);
    const ids = Array.from({ length: 40 }, (_, i) => `PAR-${i}`);
    const bodies = Array.from({ length: 8 }, (_, n) => {
      const order = n % 2 === 0 ? ids : [...ids].reverse();
      // each import sends 30 of the 40 ids, a window that overlaps every other import's
      return { [kind]: order.slice(n, n + 30).map((id) => validRow(kind, { external_id: id, [kind === 'listings' ? 'material' : 'nickname']: `Run ${n}` })) };
    });
    const responses = await Promise.all(bodies.map((body) => postBulk(service, kind, key, body)));
    expect(responses.map((r) => r.statusCode)).toEqual(bodies.map(() => 201));
    const results = responses.map((r) => r.json() as { inserted: number; updated: number; unchanged: number; skipped: number });
    for (const result of results) expect(result.inserted + result.updated + result.unchanged + result.skipped).toBe(30);
    const [stored] = await service.sql<{ rows: number; ids: number }[]>`
      select count(*)::int as rows, count(distinct external_id)::int as ids from ${service.sql(kind)} where account_id = ${account.id}`;
    const written = new Set(bodies.flatMap((body) => body[kind]!.map((row) => row.external_id)));
    expect(stored).toEqual({ rows: written.size, ids: written.size });
    expect(results.reduce((sum, r) => sum + r.inserted, 0)).toBe(written.size);
  });

  it('replays an Idempotency-Key with the first result, its updated and unchanged counts included', async () => {
    const { account, key } = await newPartner(service);
    const rows = [validRow(kind, { external_id: 'I-1' }), validRow(kind, { external_id: 'I-2' })];
    await postBulk(service, kind, key, { [kind]: rows });
    const body = { [kind]: [{ ...rows[0]!, external_id: 'I-1', [kind === 'listings' ? 'material' : 'model']: 'Other' }, rows[1]!] };
    const first = await postBulk(service, kind, key, body, `sync-${kind}-1`);
    const replay = await postBulk(service, kind, key, body, `sync-${kind}-1`);
    expect(first.json()).toEqual({ inserted: 0, updated: 1, unchanged: 1, skipped: 0, errors: [], import_id: expect.any(String) });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(first.json());
    expect((await storedFor(service, account))[kind]).toBe(2);
  });

  describe('dry run', () => {
    it('answers 200 with what the import would give and dry_run: true, and writes nothing', async () => {
      const { account, key } = await newPartner(service);
      const rows = [validRow(kind, { external_id: 'D-1' }), validRow(kind, { external_id: 'D-2' })];
      await postBulk(service, kind, key, { [kind]: rows });
      const before = await storedFor(service, account);

      const body = { [kind]: [rows[0]!, { ...rows[1]!, [kind === 'listings' ? 'title' : 'nickname']: 'Renamed' }, validRow(kind), { nonsense: true }] };
      const checked = await dryRun(key, body);
      expect(checked.statusCode).toBe(200);
      const answer = checked.json();
      expect(answer).toMatchObject({ inserted: 1, updated: 1, unchanged: 1, skipped: 1, dry_run: true });
      expect(answer.errors.map((e: { index: number }) => e.index)).toEqual([3]);
      expect(await storedFor(service, account)).toEqual(before);

      // the real import then does exactly what the dry run said
      const real = await postBulk(service, kind, key, body);
      expect(real.statusCode).toBe(201);
      const { dry_run: _dry, ...expected } = answer;
      // a dry run has no import; the real one names its own
      expect(real.json()).toEqual({ ...expected, import_id: expect.any(String) });
    });

    it('answers a dry run without external ids with the plain counts', async () => {
      const { account, key } = await newPartner(service);
      const checked = await dryRun(key, { [kind]: [validRow(kind)] });
      expect(checked.statusCode).toBe(200);
      expect(checked.json()).toEqual({ inserted: 1, skipped: 0, errors: [], dry_run: true });
      expect(await storedFor(service, account)).toEqual({ listings: 0, machines: 0, imports: 0, idempotencyKeys: 0 });
    });

    it('runs a large body, prepared on a thread, as a dry run too', async () => {
      const { account, key } = await newPartner(service);
      const rows = Array.from({ length: 100 }, (_, i) =>
        validRow(kind, { external_id: `BIG-${i}`, [kind === 'listings' ? 'description' : 'model']: `${'z'.repeat(kind === 'listings' ? 1_900 : 190)}${i}` }),
      );
      const body = { [kind]: rows };
      const padded = JSON.stringify(body).length;
      // note: padding through a field the schema drops takes the body to the large bodies' threads
      const payload = padded > LARGE_FROM_BYTES ? body : { [kind]: rows.map((row) => ({ ...row, padding: 'p'.repeat(Math.ceil(LARGE_FROM_BYTES / rows.length)) })) };
      expect(JSON.stringify(payload).length).toBeGreaterThan(LARGE_FROM_BYTES);
      const checked = await dryRun(key, payload);
      expect(checked.json()).toEqual({ inserted: 100, updated: 0, unchanged: 0, skipped: 0, errors: [], dry_run: true });
      expect((await storedFor(service, account))[kind]).toBe(0);
    });

    it('treats dry_run=false as an import', async () => {
      const { account, key } = await newPartner(service);
      const response = await dryRun(key, { [kind]: [validRow(kind)] }, 'dry_run=false');
      expect(response.statusCode).toBe(201);
      expect(response.json()).toEqual({ inserted: 1, skipped: 0, errors: [], import_id: expect.any(String) });
      expect((await storedFor(service, account))[kind]).toBe(1);
    });

    it.each(['dry_run=yes', 'dry_run=TRUE', 'dry_run=1', 'dry_run=', 'dry_run', 'dry_run=true&dry_run=true'])('refuses %s with a 400 and writes nothing', async (query) => {
      const { account, key } = await newPartner(service);
      const response = await dryRun(key, { [kind]: [validRow(kind)] }, query);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({ error: 'dry_run must be true or false', code: 'invalid_dry_run' });
      expect(await storedFor(service, account)).toEqual({ listings: 0, machines: 0, imports: 0, idempotencyKeys: 0 });
    });

    it('refuses a dry run with an Idempotency-Key, and records no key', async () => {
      const { account, key } = await newPartner(service);
      const response = await dryRun(key, { [kind]: [validRow(kind)] }, 'dry_run=true', { 'idempotency-key': 'nightly-1' });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({ error: 'Idempotency-Key cannot be used with dry_run=true: a dry run writes nothing to replay', code: 'dry_run_with_idempotency_key' });
      expect(await storedFor(service, account)).toEqual({ listings: 0, machines: 0, imports: 0, idempotencyKeys: 0 });
    });

    it('needs the key, scope and tier of an import and counts against the rate limits', async () => {
      const { key } = await newPartner(service);
      const body = { [kind]: [validRow(kind)] };
      const first = await dryRun(key, body);
      const second = await dryRun(key, body);
      expect(Number(second.headers['x-ratelimit-remaining-minute'])).toBe(Number(first.headers['x-ratelimit-remaining-minute']) - 1);

      const readOnly = await newPartner(service, {}, ['listings:read']);
      expect((await dryRun(readOnly.key, body)).statusCode).toBe(403);
      const pro = await newPartner(service);
      await service.sql`update accounts set subscription_tier = 'pro' where id = ${pro.account.id}`;
      expect((await dryRun(pro.key, body)).statusCode).toBe(402);
      expect((await dryRun('svc_live_00000000_00000000000000000000000000000000', body)).statusCode).toBe(401);
    });

    it('refuses what an import refuses, with the same 400', async () => {
      const { key } = await newPartner(service);
      const response = await dryRun(key, { [kind]: [{ nonsense: true }] });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ error: 'no valid rows', code: 'no_valid_rows' });
    });
  });
});
