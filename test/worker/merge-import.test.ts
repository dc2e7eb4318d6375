import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { checkImportBody } from '../../src/api/import/check-import-body.js';
import { isImportRefusal } from '../../src/api/import/import-refusal.js';
import type { ImportKind } from '../../src/shared/import/import-kinds.js';
import { encodeImportRows, encodeMergeRows } from '../../src/shared/import/rows-hand-over.js';
import type { MergeRow } from '../../src/shared/rows/merge-row.js';
import type { ListingRow } from '../../src/shared/rows/listing-row.js';
import { writeImport, type ImportWrite } from '../../src/worker/write-import.js';
import { validListing, validMachine } from '../support/fixtures.js';
import { insertAccount, useTestPool } from '../support/database-with-account.js';

/**
 * writeImport with `update=merge` (docs/catalogue.md#merge): a row changes only the fields it
 * carries, `null` clears, an unknown id creates a whole row and fails a partial one, archived rows
 * come back, machines' verification follows their identity, and it stays exactly once.
 */
describe('writeImport with update=merge', () => {
  const db = useTestPool(12);

  const newAccount = () => insertAccount(db.sql, 'Merger');

  /** An import job as the API makes it from these rows: checked up front (merge or whole rows), its failures in `errors`. */
  function importOf(kind: ImportKind, accountId: string, rows: unknown[], merge: boolean, extra: Partial<ImportWrite> = {}): ImportWrite {
    const checked = checkImportBody(kind, { [kind]: rows }, { update: merge ? 'merge' : 'replace' });
    if (isImportRefusal(checked)) throw new Error(`refused: ${JSON.stringify(checked)}`);
    const encoded = merge ? encodeMergeRows(checked.rows as MergeRow<ListingRow>[]) : encodeImportRows(checked.rows as ListingRow[]);
    return {
      importId: randomUUID(), kind, accountId, requestId: 'merge-test', total: rows.length, errors: checked.errors,
      rowCount: checked.rows.length, rows: encoded, matchExternalIds: checked.matchExternalIds, merge, ...extra,
    };
  }

  const listing = (accountId: string, externalId: string) =>
    db.sql<Record<string, unknown>[]>`select * from listings where account_id = ${accountId} and external_id = ${externalId}`.then((rows) => rows[0]!);

  it('changes only the fields a row carries, and counts updated and unchanged', async () => {
    const accountId = await newAccount();
    const whole = [
      validListing({ external_id: 'M-1', color: 'red', tags: ['a', 'b'], print_time_hours: 3 }),
      validListing({ external_id: 'M-2', color: 'blue' }),
    ];
    await writeImport(db.sql, importOf('listings', accountId, whole, false));
    const before = await listing(accountId, 'M-1');

    const result = await writeImport(db.sql, importOf('listings', accountId, [{ external_id: 'M-1', price_cents: 4_200, photo_urls: ['https://cdn.example.com/new.jpg'] }, { external_id: 'M-2', color: 'blue' }], true));
    expect(result).toEqual({ inserted: 0, updated: 1, unchanged: 1, skipped: 0, errors: [] });

    const after = await listing(accountId, 'M-1');
    expect(after).toMatchObject({ price_cents: 4_200, photo_urls: ['https://cdn.example.com/new.jpg'], thumbnail_url: 'https://cdn.example.com/new.jpg' });
    // every field it did not carry is as it was
    for (const field of ['title', 'description', 'category', 'material', 'color', 'tags', 'print_time_hours', 'is_available', 'allows_custom_orders', 'created_at']) {
      expect(after[field], field).toEqual(before[field]);
    }
    expect(after['updated_at']).not.toBeNull();
  });

  it('clears an optional field sent as null, and sets a boolean sent as null to its default', async () => {
    const accountId = await newAccount();
    await writeImport(db.sql, importOf('listings', accountId, [validListing({ external_id: 'N-1', color: 'red', tags: ['x'], print_time_hours: 2, is_available: false, allows_custom_orders: true })], false));
    const result = await writeImport(db.sql, importOf('listings', accountId, [{ external_id: 'N-1', color: null, tags: null, print_time_hours: null, is_available: null, allows_custom_orders: null }], true));
    expect(result).toMatchObject({ updated: 1, skipped: 0 });
    expect(await listing(accountId, 'N-1')).toMatchObject({ color: null, tags: [], print_time_hours: null, is_available: true, allows_custom_orders: false });
  });

  it('creates a whole row whose id names none, and fails a partial one naming its missing fields, beside the request\'s own failures', async () => {
    const accountId = await newAccount();
    const result = await writeImport(
      db.sql,
      importOf('listings', accountId, [
        { external_id: 'X-1', price_cents: 5 },
        validListing({ external_id: 'X-2' }),
        { title: 'no id' },
        { external_id: 'X-3', title: null },
      ], true),
    );
    expect(result.inserted).toBe(1);
    expect(result.updated).toBe(0);
    expect(result.unchanged).toBe(0);
    expect(result.skipped).toBe(3);
    expect(result.errors).toEqual([
      {
        index: 0,
        external_id: 'X-1',
        reason: 'title: required; description: required; currency: required; category: required; material: required; photo_urls: required',
        details: ['title', 'description', 'currency', 'category', 'material', 'photo_urls'].map((field) => ({ field, code: 'required', message: 'required' })),
      },
      { index: 2, reason: 'external_id: required with update=merge', details: [{ field: 'external_id', code: 'required', message: 'required with update=merge' }] },
      { index: 3, external_id: 'X-3', reason: 'title: required', details: [{ field: 'title', code: 'required', message: 'required' }] },
    ]);
    const written = await db.sql<{ external_id: string }[]>`select external_id from listings where account_id = ${accountId}`;
    expect(written.map((row) => row.external_id)).toEqual(['X-2']);
    const [recorded] = await db.sql<{ skipped: number; errors: unknown[]; merge: boolean }[]>`select skipped, errors, merge from imports where account_id = ${accountId}`;
    expect(recorded).toEqual({ skipped: 3, errors: result.errors, merge: true });
  });

  it('restores an archived row it names, counted updated even when nothing else changes', async () => {
    const accountId = await newAccount();
    await writeImport(db.sql, importOf('listings', accountId, [validListing({ external_id: 'R-1', color: 'green' })], false));
    await db.sql`update listings set archived_at = now() - interval '1 hour' where account_id = ${accountId}`;
    const result = await writeImport(db.sql, importOf('listings', accountId, [{ external_id: 'R-1', color: 'green' }], true));
    expect(result).toMatchObject({ inserted: 0, updated: 1, unchanged: 0 });
    expect(await listing(accountId, 'R-1')).toMatchObject({ archived_at: null, color: 'green' });
  });

  it('sends a machine whose identity changes back to pending, and keeps the status of one whose nickname changes', async () => {
    const accountId = await newAccount();
    await writeImport(db.sql, importOf('machines', accountId, [validMachine({ external_id: 'P-1' }), validMachine({ external_id: 'P-2' })], false));
    await db.sql`update machines set verification_status = 'verified' where account_id = ${accountId}`;
    const result = await writeImport(db.sql, importOf('machines', accountId, [{ external_id: 'P-1', model_number: 'MK4S' }, { external_id: 'P-2', nickname: 'Old faithful' }], true));
    expect(result).toMatchObject({ updated: 2, skipped: 0 });
    const machines = await db.sql<{ external_id: string; verification_status: string; model_number: string | null; nickname: string | null }[]>`
      select external_id, verification_status, model_number, nickname from machines where account_id = ${accountId} order by external_id`;
    expect(machines.map((m) => [m.external_id, m.verification_status])).toEqual([['P-1', 'pending'], ['P-2', 'verified']]);
    expect(machines[0]!.model_number).toBe('MK4S');
    expect(machines[1]!.nickname).toBe('Old faithful');
  });

  it('writes nothing in a dry run and answers what it would have done', async () => {
    const accountId = await newAccount();
    await writeImport(db.sql, importOf('listings', accountId, [validListing({ external_id: 'D-1', price_cents: 100 })], false));
    const result = await writeImport(db.sql, importOf('listings', accountId, [{ external_id: 'D-1', price_cents: 200 }, { external_id: 'D-2', title: 'partial' }], true, { dryRun: true }));
    expect(result).toMatchObject({ inserted: 0, updated: 1, unchanged: 0, skipped: 1 });
    expect(await listing(accountId, 'D-1')).toMatchObject({ price_cents: 100 });
    expect((await db.sql`select 1 from imports where account_id = ${accountId} and merge`).length).toBe(0);
  });

  it('returns the recorded result when the job runs again, and writes nothing twice', async () => {
    const accountId = await newAccount();
    await writeImport(db.sql, importOf('listings', accountId, [validListing({ external_id: 'E-1', price_cents: 100 })], false));
    const job = importOf('listings', accountId, [{ external_id: 'E-1', price_cents: 300 }, { external_id: 'E-2', title: 'partial' }], true);
    const first = await writeImport(db.sql, job);
    await db.sql`update listings set price_cents = 1 where account_id = ${accountId} and external_id = 'E-1'`;
    expect(await writeImport(db.sql, { ...job })).toEqual(first);
    expect(await listing(accountId, 'E-1')).toMatchObject({ price_cents: 1 });
  });

  it('merges into the row as another import left it when that import held the row: never from an older version', async () => {
    const accountId = await newAccount();
    await writeImport(db.sql, importOf('listings', accountId, [validListing({ external_id: 'L-1', color: 'one', price_cents: 100 })], false));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const whole = writeImport(db.sql, importOf('listings', accountId, [validListing({ external_id: 'L-1', color: 'two', price_cents: 100 })], false), { beforeCommit: () => held });
    await expect.poll(async () => (await db.sql`select 1 from listings where account_id = ${accountId} and xmax <> 0`).length, { timeout: 5_000 }).toBe(1);
    const merge = writeImport(db.sql, importOf('listings', accountId, [{ external_id: 'L-1', price_cents: 7 }], true));
    // the merge waits for the row's lock
    await expect
      .poll(async () => (await db.sql`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`).length, { timeout: 5_000 })
      .toBe(1);
    release();
    expect(await whole).toMatchObject({ updated: 1 });
    expect(await merge).toMatchObject({ updated: 1 });
    expect(await listing(accountId, 'L-1')).toMatchObject({ color: 'two', price_cents: 7 });
  });

  it('lets merges and whole upserts of one account race on the same ids without a deadlock, a lost field or a duplicate', async () => {
    const accountId = await newAccount();
    const ids = Array.from({ length: 40 }, (_, n) => `Z-${n}`);
    await writeImport(db.sql, importOf('listings', accountId, ids.map((id) => validListing({ external_id: id, color: 'start' })), false));
    // each merge sets its own field; the whole upserts reset the colour, and create new ids too
    const jobs = Array.from({ length: 12 }, (_, n) => {
      const shuffled = [...ids].sort(() => Math.random() - 0.5);
      if (n % 3 === 0) return importOf('listings', accountId, [...shuffled.slice(0, 20), `Z-new-${n}`].map((id) => validListing({ external_id: id, color: 'start' })), false);
      return importOf('listings', accountId, shuffled.map((id) => ({ external_id: id, price_cents: 1_000 + n })), true);
    });
    const results = await Promise.all(jobs.map((job) => writeImport(db.sql, job)));
    expect(results.every((result) => result.skipped === 0)).toBe(true);
    const rows = await db.sql<{ external_id: string; color: string }[]>`select external_id, color from listings where account_id = ${accountId}`;
    expect(rows.length).toBe(ids.length + 4);
    expect(new Set(rows.map((row) => row.external_id)).size).toBe(rows.length);
    // no merge ever wrote a field it did not carry
    expect(rows.every((row) => row.color === 'start')).toBe(true);
  });
});
