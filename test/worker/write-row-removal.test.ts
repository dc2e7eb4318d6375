import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImportJobDataSchema } from '../../src/shared/import/import-job.js';
import { encodeRemovalEntries, RowRemovalJobDataSchema, type RemovalEntry, type RowRemovalJobData } from '../../src/shared/import/row-removal-job.js';
import { encodeImportRows } from '../../src/shared/import/rows-hand-over.js';
import { recordImportNotWritten } from '../../src/shared/repositories/import-records.js';
import { ListingRowSchema } from '../../src/shared/rows/listing-row.js';
import { ImportAbandonedError, ImportRowCountError, ImportRowsGoneError } from '../../src/worker/write-errors.js';
import { writeImport } from '../../src/worker/write-import.js';
import { writeRowRemoval, type RowRemovalWrite } from '../../src/worker/write-row-removal.js';
import { openDatabaseWithAccount, type DatabaseWithAccount } from '../support/database-with-account.js';
import { validListing } from '../support/fixtures.js';

/**
 * writeRowRemoval: an archive or delete written with its import's record in one transaction,
 * exactly once by the import's id, or not at all (docs/catalogue.md#archive-and-delete).
 */
describe('writeRowRemoval', () => {
  let db: DatabaseWithAccount;

  beforeAll(async () => {
    db = await openDatabaseWithAccount('Remover', 6);
  });
  afterAll(async () => {
    await db?.close();
  });

  /** Listings with these external_ids, written as an import writes them. */
  async function seed(externalIds: string[]): Promise<void> {
    const rows = externalIds.map((id) => ListingRowSchema.parse(validListing({ external_id: id })));
    const n = rows.length;
    await writeImport(db.sql, { importId: randomUUID(), kind: 'listings', accountId: db.accountId, requestId: 'seed', total: n, errors: [], rowCount: n, matchExternalIds: true, rows: encodeImportRows(rows) });
  }

  function removal(action: 'archive' | 'delete', entries: RemovalEntry[], overrides: Partial<RowRemovalWrite> = {}): RowRemovalWrite {
    return {
      importId: randomUUID(),
      action,
      kind: 'listings',
      accountId: db.accountId,
      requestId: 'removal-test',
      total: entries.length,
      errors: [],
      by: 'external_id',
      entryCount: entries.length,
      dryRun: false,
      entriesJson: encodeRemovalEntries(entries),
      ...overrides,
    };
  }

  const stateOf = (externalIds: string[]) =>
    db.sql<{ external_id: string; archived_at: Date | null; updated_at: Date | null }[]>`
      select external_id, archived_at, updated_at from listings where external_id = any(${db.sql.array(externalIds)}::text[]) order by external_id`;
  const recordsOf = (importId: string) => db.sql`select state, action, received, inserted, archived, deleted, unchanged, skipped from imports where job_id = ${importId}`;

  it('run twice at once under one job id, archives once and answers both with the one result', async () => {
    await seed(['W-1', 'W-2']);
    const input = removal('archive', [
      { index: 0, key: 'W-1' },
      { index: 1, key: 'W-2' },
      { index: 2, key: 'W-GONE' },
    ]);

    const [first, second] = await Promise.all([writeRowRemoval(db.sql, input), writeRowRemoval(db.sql, input)]);

    const notFound = { index: 2, external_id: 'W-GONE', reason: 'external_id: names no listing of this account', details: [{ field: 'external_id', code: 'not_found', message: 'names no listing of this account' }] };
    expect(first).toEqual({ inserted: 0, archived: 2, unchanged: 0, skipped: 1, errors: [notFound] });
    expect(second).toEqual(first);
    expect(await recordsOf(input.importId)).toEqual([{ state: 'completed', action: 'archive', received: 3, inserted: 0, archived: 2, deleted: null, unchanged: 0, skipped: 1 }]);
    const archived = await stateOf(['W-1', 'W-2']);
    expect(archived.every((row) => row.archived_at !== null)).toBe(true);

    // once more later (a job that ran again after its commit): the recorded result, nothing touched
    const again = await writeRowRemoval(db.sql, { ...input, entriesJson: Promise.resolve(null) });
    expect(again).toEqual(first);
    expect(await stateOf(['W-1', 'W-2'])).toEqual(archived);
  });

  it('writes nothing when the API fenced the import as failed (ImportAbandonedError)', async () => {
    await seed(['F-1']);
    const input = removal('delete', [{ index: 0, key: 'F-1' }]);
    await recordImportNotWritten(db.sql, { importId: input.importId, accountId: db.accountId, kind: 'listings', requestId: 'x', total: 1, errors: [], action: 'delete' });

    await expect(writeRowRemoval(db.sql, input)).rejects.toBeInstanceOf(ImportAbandonedError);
    expect(await stateOf(['F-1'])).toHaveLength(1);
    expect(await recordsOf(input.importId)).toEqual([{ state: 'failed', action: 'delete', received: 1, inserted: 0, archived: null, deleted: null, unchanged: null, skipped: 0 }]);
  });

  it.each([
    ['its entries are gone', { entriesJson: Promise.resolve(null) }, ImportRowsGoneError],
    ['its entries are not the count it announced', { entryCount: 2 }, ImportRowCountError],
    ['its entries are an array, as an upsert\'s rows', { entriesJson: '[{"index": 0, "key": "G-1"}]' }, ImportRowCountError],
  ])('writes nothing when %s', async (_case, overrides, error) => {
    await seed(['G-1']);
    const input = removal('delete', [{ index: 0, key: 'G-1' }], overrides as Partial<RowRemovalWrite>);
    await expect(writeRowRemoval(db.sql, input)).rejects.toBeInstanceOf(error);
    expect(await stateOf(['G-1'])).toHaveLength(1);
    expect(await recordsOf(input.importId)).toEqual([]);
    await db.sql`delete from listings where external_id = 'G-1'`;
  });

  it('a dry run answers what it would do and leaves the rows and the imports as they were', async () => {
    await seed(['D-1']);
    const input = removal('delete', [{ index: 0, key: 'D-1' }], { dryRun: true });
    expect(await writeRowRemoval(db.sql, input)).toEqual({ inserted: 0, deleted: 1, skipped: 0, errors: [] });
    expect(await stateOf(['D-1'])).toHaveLength(1);
    expect(await recordsOf(input.importId)).toEqual([]);
  });
});

describe('an archive or delete job during a rolling deploy', () => {
  const job: RowRemovalJobData = {
    action: 'archive',
    kind: 'listings',
    accountId: randomUUID(),
    requestId: 'req-1',
    total: 2,
    errors: [],
    by: 'external_id',
    entryCount: 2,
  };

  it('is refused by the upsert schema, which every worker before it checks every job with: it has no rowCount', () => {
    expect(RowRemovalJobDataSchema.safeParse(job).success).toBe(true);
    const asUpsert = ImportJobDataSchema.safeParse(job);
    expect(asUpsert.success).toBe(false);
    expect(asUpsert.error?.issues.map((issue) => issue.path.join('.'))).toEqual(['rowCount']);
  });
});
