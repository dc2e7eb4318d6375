import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { writeImport, type ImportWrite } from '../../src/worker/write-import.js';
import { ListingRowSchema } from '../../src/shared/rows/listing-row.js';
import { MachineRowSchema } from '../../src/shared/rows/machine-row.js';
import { validListing, validMachine } from '../support/fixtures.js';
import { insertAccount, useTestPool } from '../support/database-with-account.js';
import { encodeRowsAs, inEuros, ROWS_ENCODINGS } from '../support/encode-rows.js';

/**
 * writeImport matching rows on the partner's `external_id` (docs/rows.md#external-id): update in
 * place, leave alone what would not change, never touch another account's rows, stay exactly
 * once, and survive imports that race on the same ids.
 */
describe.each(ROWS_ENCODINGS)('writeImport by external_id, rows as %s', (encoding) => {
  const db = useTestPool(12);

  const newAccount = (name = 'Upserter', avatarUrl: string | null = null) => insertAccount(db.sql, name, avatarUrl);

  function listingsImport(accountId: string, inputs: Record<string, unknown>[], extra: Partial<ImportWrite> = {}): ImportWrite {
    const rows = inputs.map((input) => ListingRowSchema.parse(input));
    return {
      importId: randomUUID(), kind: 'listings', accountId, requestId: 'upsert-test', total: rows.length, errors: [],
      rowCount: rows.length, rows: encodeRowsAs(encoding, 'listings', rows), matchExternalIds: true, ...extra,
    };
  }

  function machinesImport(accountId: string, inputs: Record<string, unknown>[], extra: Partial<ImportWrite> = {}): ImportWrite {
    const rows = inputs.map((input) => MachineRowSchema.parse(input));
    return {
      importId: randomUUID(), kind: 'machines', accountId, requestId: 'upsert-test', total: rows.length, errors: [],
      rowCount: rows.length, rows: encodeRowsAs(encoding, 'machines', rows), matchExternalIds: true, ...extra,
    };
  }

  const listingsOf = (accountId: string) => db.sql<{ external_id: string | null; title: string; price_cents: number; maker_name: string; updated_at: Date | null }[]>`
    select external_id, title, price_cents, maker_name, updated_at from listings where account_id = ${accountId} order by external_id, title`;

  it('creates rows with new ids, updates the changed ones in place and leaves the others untouched', async () => {
    const accountId = await newAccount();
    const rows = Array.from({ length: 4 }, (_, i) => validListing({ external_id: `SKU-${i}`, title: `Lamp ${i}` }));
    expect(await writeImport(db.sql, listingsImport(accountId, rows))).toEqual({ inserted: 4, updated: 0, unchanged: 0, skipped: 0, errors: [] });
    const before = await listingsOf(accountId);

    const again = [
      { ...rows[0]!, price_cents: 999 },
      { ...rows[1]!, title: 'Lamp 1, now in oak' },
      rows[2]!,
      rows[3]!,
      validListing({ external_id: 'SKU-new', title: 'Brand new' }),
      validListing({ title: 'No id at all' }),
    ];
    expect(await writeImport(db.sql, listingsImport(accountId, again))).toEqual({ inserted: 2, updated: 2, unchanged: 2, skipped: 0, errors: [] });

    const after = await listingsOf(accountId);
    expect(after.map((r) => [r.external_id, r.title, r.price_cents])).toEqual([
      ['SKU-0', 'Lamp 0', 999],
      ['SKU-1', 'Lamp 1, now in oak', 2_500],
      ['SKU-2', 'Lamp 2', 2_500],
      ['SKU-3', 'Lamp 3', 2_500],
      ['SKU-new', 'Brand new', 2_500],
      [null, 'No id at all', 2_500],
    ]);
    // the unchanged rows were not written at all
    expect(after.slice(2, 4)).toEqual(before.slice(2, 4));
    expect(after[0]!.updated_at).not.toBeNull();
    expect(before[0]!.updated_at).toBeNull();
  });

  it('replaces every input field, applying the defaults as a create does, and refreshes the maker from the profile', async () => {
    const accountId = await newAccount('Old name');
    const first = validListing({ external_id: 'A-1', color: 'red', tags: ['x'], is_available: false, print_time_hours: 3 });
    await writeImport(db.sql, listingsImport(accountId, [first]));
    await db.sql`update accounts set display_name = 'New name', avatar_url = 'https://cdn.example.test/me.png' where id = ${accountId}`;
    const { color: _c, tags: _t, is_available: _a, print_time_hours: _p, ...bare } = first;
    expect(await writeImport(db.sql, listingsImport(accountId, [bare]))).toMatchObject({ inserted: 0, updated: 1, unchanged: 0 });
    const [row] = await db.sql`
      select color, tags, is_available, print_time_hours, maker_name, maker_photo_url from listings where account_id = ${accountId}`;
    expect(row).toEqual({
      color: null, tags: [], is_available: true, print_time_hours: null, maker_name: 'New name', maker_photo_url: 'https://cdn.example.test/me.png',
    });
    // the same rows once more change nothing
    expect(await writeImport(db.sql, listingsImport(accountId, [bare]))).toMatchObject({ inserted: 0, updated: 0, unchanged: 1 });
  });

  it('sends a machine whose identity changes back to pending, and keeps the status of one whose other fields change', async () => {
    const accountId = await newAccount();
    const rows = [
      validMachine({ external_id: 'M-1', model: 'MK4' }),
      validMachine({ external_id: 'M-2', nickname: 'Old' }),
      validMachine({ external_id: 'M-3', model_number: null }),
    ];
    await writeImport(db.sql, machinesImport(accountId, rows));
    await db.sql`update machines set verification_status = 'verified' where account_id = ${accountId}`;
    const changed = [{ ...rows[0]!, model: 'MK4S' }, { ...rows[1]!, nickname: 'New' }, { ...rows[2]!, model_number: 'X-9' }];
    expect(await writeImport(db.sql, machinesImport(accountId, changed))).toMatchObject({ inserted: 0, updated: 3, unchanged: 0 });
    const statuses = await db.sql<{ external_id: string; verification_status: string; nickname: string | null }[]>`
      select external_id, verification_status, nickname from machines where account_id = ${accountId} order by external_id`;
    expect(statuses.map((r) => [r.external_id, r.verification_status, r.nickname])).toEqual([
      ['M-1', 'pending', null],
      ['M-2', 'verified', 'New'],
      ['M-3', 'pending', null],
    ]);
  });

  it('never matches or touches another account\'s rows with the same ids', async () => {
    const mine = await newAccount('Mine');
    const theirs = await newAccount('Theirs');
    await writeImport(db.sql, listingsImport(theirs, [validListing({ external_id: 'SHARED', title: 'Theirs' })]));
    expect(await writeImport(db.sql, listingsImport(mine, [validListing({ external_id: 'SHARED', title: 'Mine' })]))).toMatchObject({ inserted: 1, updated: 0 });
    expect((await listingsOf(theirs)).map((r) => r.title)).toEqual(['Theirs']);
    expect((await listingsOf(mine)).map((r) => r.title)).toEqual(['Mine']);
  });

  it('keeps listings and machines apart: the same id in each is two things', async () => {
    const accountId = await newAccount();
    await writeImport(db.sql, listingsImport(accountId, [validListing({ external_id: 'BOTH' })]));
    expect(await writeImport(db.sql, machinesImport(accountId, [validMachine({ external_id: 'BOTH' })]))).toMatchObject({ inserted: 1 });
  });

  it('returns the recorded result, with its counts, when the job runs again, and writes nothing', async () => {
    const accountId = await newAccount();
    const rows = [validListing({ external_id: 'R-1' }), validListing({ external_id: 'R-2' })];
    await writeImport(db.sql, listingsImport(accountId, rows));
    const job = listingsImport(accountId, [{ ...rows[0]!, price_cents: 1 }, rows[1]!]);
    const first = await writeImport(db.sql, job);
    expect(first).toEqual({ inserted: 0, updated: 1, unchanged: 1, skipped: 0, errors: [] });
    const updatedAt = (await listingsOf(accountId)).map((r) => r.updated_at?.getTime());
    // the second run of the same job, with other rows, finds the record
    const rerun = await writeImport(db.sql, { ...job, rows: encodeRowsAs(encoding, 'listings', [ListingRowSchema.parse({ ...rows[0]!, price_cents: 7 })]), rowCount: 1 });
    expect(rerun).toEqual(first);
    expect((await listingsOf(accountId)).map((r) => [r.price_cents, r.updated_at?.getTime()])).toEqual([
      [1, updatedAt[0]],
      [2_500, updatedAt[1]],
    ]);
  });

  it('writes nothing in a dry run, and answers what the import would have done', async () => {
    const accountId = await newAccount();
    const rows = [validListing({ external_id: 'D-1' }), validListing({ external_id: 'D-2' })];
    await writeImport(db.sql, listingsImport(accountId, rows));
    const before = await listingsOf(accountId);
    const dryRun = listingsImport(accountId, [{ ...rows[0]!, title: 'Changed' }, rows[1]!, validListing({ external_id: 'D-3' })], { dryRun: true });
    expect(await writeImport(db.sql, dryRun)).toEqual({ inserted: 1, updated: 1, unchanged: 1, skipped: 0, errors: [] });
    expect(await listingsOf(accountId)).toEqual(before);
    const [recorded] = await db.sql`select count(*)::int as n from imports where job_id = ${dryRun.importId}`;
    expect(recorded!.n).toBe(0);
  });

  it('rolls a dry run back even when a row breaks a table constraint: the error is the one the import would meet', async () => {
    const accountId = await newAccount();
    const broken = listingsImport(accountId, [validListing()], { dryRun: true });
    broken.rows = inEuros(broken.rows as string | Uint8Array);
    await expect(writeImport(db.sql, broken)).rejects.toMatchObject({ code: '23514' });
    expect(await listingsOf(accountId)).toEqual([]);
  });

  it('lets imports of one account race on the same ids without a duplicate, a deadlock or a unique violation', async () => {
    const accountId = await newAccount();
    const ids = Array.from({ length: 60 }, (_, i) => `RACE-${String(i).padStart(3, '0')}`);
    // every import holds every id, in its own order and with its own price: they all conflict
    // with one another on every row, in orders that would deadlock if taken as sent.
    const imports = Array.from({ length: 10 }, (_, n) => {
      const order = n % 2 === 0 ? ids : [...ids].reverse();
      const rotated = [...order.slice(n * 5), ...order.slice(0, n * 5)];
      return listingsImport(accountId, rotated.map((id) => validListing({ external_id: id, price_cents: n })));
    });
    const results = await Promise.all(imports.map((job) => writeImport(db.sql, job)));
    const rows = await listingsOf(accountId);
    expect(rows.map((r) => r.external_id)).toEqual(ids);
    // exactly one import created each row; every other one updated it (each sent a new price)
    expect(results.reduce((sum, r) => sum + r.inserted, 0)).toBe(ids.length);
    expect(results.reduce((sum, r) => sum + (r.updated ?? 0) + (r.unchanged ?? 0), 0)).toBe(ids.length * 9);
  });

  it('restores an archived row its external_id names, counted updated even when no field changes, and moves its updated_at', async () => {
    const accountId = await newAccount();
    const rows = [validListing({ external_id: 'A-0', title: 'Kept' }), validListing({ external_id: 'A-1', title: 'Shelved' }), validListing({ external_id: 'A-2' })];
    await writeImport(db.sql, listingsImport(accountId, rows));
    const archivedAt = new Date(Date.now() - 60_000);
    await db.sql`update listings set archived_at = ${archivedAt}, updated_at = ${archivedAt} where account_id = ${accountId} and external_id in ('A-1', 'A-2')`;

    // A-1 comes back as it was, A-2 with a new price; A-0 is active and unchanged
    const result = await writeImport(db.sql, listingsImport(accountId, [rows[0]!, rows[1]!, { ...rows[2]!, price_cents: 1 }]));
    expect(result).toEqual({ inserted: 0, updated: 2, unchanged: 1, skipped: 0, errors: [] });
    const after = await db.sql<{ external_id: string; archived_at: Date | null; updated_at: Date | null; title: string }[]>`
      select external_id, archived_at, updated_at, title from listings where account_id = ${accountId} order by external_id`;
    expect(after.map((row) => [row.external_id, row.archived_at, row.title])).toEqual([['A-0', null, 'Kept'], ['A-1', null, 'Shelved'], ['A-2', null, rows[2]!.title as string]]);
    expect(after[0]!.updated_at).toBeNull();
    for (const restored of after.slice(1)) expect(restored.updated_at!.getTime()).toBeGreaterThan(archivedAt.getTime());
  });

  it('keeps the plain insert for an import without external ids, as before', async () => {
    const accountId = await newAccount();
    const job = listingsImport(accountId, [validListing(), validListing()], { matchExternalIds: false });
    expect(await writeImport(db.sql, job)).toEqual({ inserted: 2, skipped: 0, errors: [] });
  });
});
