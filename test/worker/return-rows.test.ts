import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCopyRows } from '../../src/shared/import/copy-rows.js';
import { encodeRemovalEntries } from '../../src/shared/import/row-removal-job.js';
import { purgeEndedImports } from '../../src/shared/repositories/import-retention.js';
import { ListingRowSchema, type ListingRow } from '../../src/shared/rows/listing-row.js';
import { MergeRaceError } from '../../src/worker/write-errors.js';
import { writeImport, type ImportWrite } from '../../src/worker/write-import.js';
import { writeRowRemoval, type RowRemovalWrite } from '../../src/worker/write-row-removal.js';
import { validListing } from '../support/fixtures.js';
import { openDatabaseWithAccount, type DatabaseWithAccount } from '../support/database-with-account.js';
import { commitGate } from '../support/hold-in-transaction.js';

/**
 * The worker's side of `?return=rows` (docs/catalogue.md#rows-and-their-ids): a rerun of a job
 * its import's record holds (its worker died after the commit) answers the same rows from the
 * record, with its rows or without them; an unchanged row another import created after the
 * statement began rolls the write back for a retry; the purge takes the outcomes with the import.
 */
describe('writeImport and writeRowRemoval with returnRows', () => {
  let db: DatabaseWithAccount;

  beforeAll(async () => {
    db = await openDatabaseWithAccount('Outcomes');
  });
  afterAll(async () => {
    await db?.close();
  });

  const listing = (externalId: string): ListingRow => ListingRowSchema.parse(validListing({ external_id: externalId }));
  /** Rows as the API encodes them with return=rows: `COPY` text, each line led by its request index. */
  const indexedRows = (rows: ListingRow[], indexes: number[]) => new TextEncoder().encode(encodeCopyRows('listings', rows, indexes));

  function upsert(rows: ListingRow[], indexes: number[], overrides: Partial<ImportWrite> = {}): ImportWrite {
    const total = Math.max(...indexes) + 1;
    const failed = Array.from({ length: total }, (_, i) => i).filter((i) => !indexes.includes(i));
    return {
      importId: randomUUID(),
      kind: 'listings',
      accountId: db.accountId,
      requestId: 'return-rows-test',
      total,
      errors: failed.map((index) => ({ index, reason: 'title: required', details: [{ field: 'title', code: 'required', message: 'required' }] })),
      rowCount: rows.length,
      matchExternalIds: true,
      returnRows: true,
      ...overrides,
      // note: indexed only when asked, as the API encodes them (prepare-import.ts)
      rows: overrides.returnRows === false ? new TextEncoder().encode(encodeCopyRows('listings', rows)) : indexedRows(rows, indexes),
    };
  }

  async function outcomesKept(importId: string): Promise<number> {
    const [kept] = await db.sql<{ n: number }[]>`select count(*)::int as n from import_row_outcomes where job_id = ${importId}`;
    return kept!.n;
  }

  it('answers a rerun of a recorded upsert with the recorded rows, whether its rows are still there or gone', async () => {
    const rows = [listing('RERUN-1'), listing('RERUN-2')];
    const input = upsert(rows, [0, 2]);
    const first = await writeImport(db.sql, input);
    expect(first.rows).toEqual([
      { index: 0, id: expect.any(String), external_id: 'RERUN-1', outcome: 'inserted' },
      { index: 2, id: expect.any(String), external_id: 'RERUN-2', outcome: 'inserted' },
    ]);
    // note: the rows changed since; a rerun answers what the import did, never what a second write would do
    await writeImport(db.sql, upsert([{ ...rows[0]!, title: 'Later' }], [0], { returnRows: false }));
    expect(await writeImport(db.sql, { ...input, rows: indexedRows(rows, [0, 2]) })).toEqual(first);
    expect(await writeImport(db.sql, { ...input, rows: Promise.resolve(null) })).toEqual(first);
    // note: a rerun of a job that did not ask reads no rows
    const { rows: _, ...counts } = first;
    expect(await writeImport(db.sql, { ...input, returnRows: false, rows: Promise.resolve(null) })).toEqual(counts);
  });

  it('answers a rerun of a recorded archive or delete with the recorded rows', async () => {
    await writeImport(db.sql, upsert([listing('RM-1'), listing('RM-2')], [0, 1], { returnRows: false }));
    const removal: RowRemovalWrite = {
      importId: randomUUID(),
      action: 'delete',
      kind: 'listings',
      accountId: db.accountId,
      requestId: 'return-rows-test',
      total: 2,
      errors: [],
      by: 'external_id',
      entryCount: 2,
      dryRun: false,
      returnRows: true,
      entriesJson: encodeRemovalEntries([{ index: 0, key: 'RM-2' }, { index: 1, key: 'RM-1' }]),
    };
    const first = await writeRowRemoval(db.sql, removal);
    expect(first.rows?.map((row) => [row.index, row.external_id, row.outcome])).toEqual([[0, 'RM-2', 'deleted'], [1, 'RM-1', 'deleted']]);
    expect(await writeRowRemoval(db.sql, removal)).toEqual(first);
  });

  it('rolls back when a row it leaves unchanged was created by another import after its statement began, and the retry names that row', async () => {
    const row = listing('RACE-1');
    const gate = commitGate();
    const other = upsert([row], [0], { returnRows: false });
    const creating = writeImport(db.sql, other, { beforeCommit: gate.beforeCommit });
    await gate.reached;
    const racing = upsert([row], [0]);
    // note: its refusal is awaited from the start, so that a rejection before `creating` settles
    // is never an unhandled one (it was, on a Redis Cluster run)
    const refused = expect(writeImport(db.sql, racing)).rejects.toBeInstanceOf(MergeRaceError);
    // note: the statement waits on the other import's uncommitted row, with the snapshot it began with
    await new Promise((resolve) => setTimeout(resolve, 200));
    gate.release();
    await creating;
    await refused;
    expect(await outcomesKept(racing.importId)).toBe(0);
    const [created] = await db.sql<{ id: string }[]>`select id::text as id from listings where account_id = ${db.accountId} and external_id = 'RACE-1'`;
    const retried = await writeImport(db.sql, { ...racing, rows: indexedRows([row], [0]) });
    expect(retried.rows).toEqual([{ index: 0, id: created!.id, external_id: 'RACE-1', outcome: 'unchanged' }]);
  });

  it('rolls back when a row it leaves unchanged was deleted and created again by another transaction after its statement began, and the retry names the new row', async () => {
    const row = listing('RACE-2');
    await writeImport(db.sql, upsert([row], [0], { returnRows: false }));
    const [before] = await db.sql<{ id: string }[]>`select id::text as id from listings where account_id = ${db.accountId} and external_id = 'RACE-2'`;
    // another transaction deletes the row and creates it again, field for field, under a new id
    const gate = commitGate();
    const recreating = db.sql.begin(async (tx) => {
      const [gone] = await tx<Record<string, unknown>[]>`delete from listings where id = ${before!.id} returning *`;
      const { id: _oldId, ...fields } = gone!;
      await tx`insert into listings ${tx(fields)}`;
      await gate.beforeCommit();
    });
    await gate.reached;
    const racing = upsert([row], [0]);
    const refused = expect(writeImport(db.sql, racing)).rejects.toBeInstanceOf(MergeRaceError);
    // note: the statement waits on the other transaction's new row, with the snapshot it began with (the old row)
    await new Promise((resolve) => setTimeout(resolve, 200));
    gate.release();
    await recreating;
    await refused;
    expect(await outcomesKept(racing.importId)).toBe(0);
    const [recreated] = await db.sql<{ id: string }[]>`select id::text as id from listings where account_id = ${db.accountId} and external_id = 'RACE-2'`;
    expect(recreated!.id).not.toBe(before!.id);
    const retried = await writeImport(db.sql, { ...racing, rows: indexedRows([row], [0]) });
    expect(retried.rows).toEqual([{ index: 0, id: recreated!.id, external_id: 'RACE-2', outcome: 'unchanged' }]);
  });

  it('writes two imports of the same rows at once, both answering their rows, neither meeting a deadlock', async () => {
    const rows = Array.from({ length: 200 }, (_, i) => listing(`BOTH-${String(i).padStart(3, '0')}`));
    const indexes = rows.map((_, i) => i);
    await writeImport(db.sql, upsert(rows, indexes, { returnRows: false }));
    for (let pair = 0; pair < 8; pair += 1) {
      // note: one of them reversed, so that neither takes the rows in the other's order by chance
      const results = await Promise.all([writeImport(db.sql, upsert(rows, indexes)), writeImport(db.sql, upsert([...rows].reverse(), indexes))]);
      for (const result of results) expect(result.rows?.map((row) => row.outcome)).toEqual(rows.map(() => 'unchanged'));
    }
  });

  it('keeps the outcomes as long as the import, and the purge removes them with it', async () => {
    const input = upsert([listing('PURGE-1')], [0]);
    await writeImport(db.sql, input);
    expect(await outcomesKept(input.importId)).toBe(1);
    await db.sql`update imports set finished_at = now() - interval '40 days' where job_id = ${input.importId}`;
    expect(await purgeEndedImports(db.sql, { retentionDays: 30, limit: 1_000 })).toBeGreaterThanOrEqual(1);
    expect(await outcomesKept(input.importId)).toBe(0);
  });
});
