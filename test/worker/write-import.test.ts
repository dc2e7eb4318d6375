import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImportRowsGoneError } from '../../src/worker/write-errors.js';
import { writeImport, type ImportWrite } from '../../src/worker/write-import.js';
import { encodeImportRows } from '../../src/shared/import/rows-hand-over.js';
import { ListingRowSchema } from '../../src/shared/rows/listing-row.js';
import { validListing } from '../support/fixtures.js';
import { openDatabaseWithAccount, type DatabaseWithAccount } from '../support/database-with-account.js';
import { writtenByJob } from '../support/written-by-job.js';

/**
 * writeImport takes the rows as a string or as their fetch still under way (the worker reads
 * them from Redis while the transaction begins): the import is recorded before the rows are
 * needed, and rows that turn out to be gone or unreadable leave nothing behind.
 */
describe('writeImport', () => {
  let db: DatabaseWithAccount;

  beforeAll(async () => {
    db = await openDatabaseWithAccount('Writer');
  });
  afterAll(async () => {
    await db?.close();
  });

  const twoListings = () => encodeImportRows([ListingRowSchema.parse(validListing()), ListingRowSchema.parse(validListing())]);

  function importOf(rowsJson: ImportWrite['rowsJson']): ImportWrite {
    return { jobId: randomUUID(), kind: 'listings', accountId: db.accountId, requestId: 'write-import-test', total: 2, errors: [], rowCount: 2, rowsJson };
  }

  /**
   * Whether a transaction still open holds the import's record. note: another session's insert
   * of the same job id waits on the uncommitted record, and a lock timeout turns that wait into
   * an answer; the probe's own insert is always rolled back.
   */
  async function recordedInOpenTransaction(jobId: string): Promise<boolean> {
    try {
      await db.sql.begin(async (tx) => {
        await tx`set local lock_timeout = '200ms'`;
        await tx`insert into imports (job_id, account_id, kind, inserted, skipped) values (${jobId}, ${db.accountId}, 'listings', 0, 0)`;
        throw new Error('rolled back on purpose');
      });
    } catch (error) {
      return (error as { code?: string }).code === '55P03';
    }
    return false;
  }

  it('writes rows given as a string', async () => {
    const input = importOf(twoListings());
    expect(await writeImport(db.sql, input)).toEqual({ inserted: 2, skipped: 0, errors: [] });
    expect(await writtenByJob(db.sql, input.jobId)).toEqual({ listings: 2, imports: 1 });
  });

  it('records the import before the rows arrive, then writes them', async () => {
    let deliver!: (rows: string) => void;
    const input = importOf(new Promise<string>((resolve) => (deliver = resolve)));
    const writing = writeImport(db.sql, input);
    await expect.poll(() => recordedInOpenTransaction(input.jobId), { timeout: 5_000 }).toBe(true);
    deliver(twoListings());
    expect(await writing).toEqual({ inserted: 2, skipped: 0, errors: [] });
    expect(await writtenByJob(db.sql, input.jobId)).toEqual({ listings: 2, imports: 1 });
  });

  it('writes nothing, not even the record, when the rows are gone', async () => {
    const input = importOf(Promise.resolve(null));
    await expect(writeImport(db.sql, input)).rejects.toBeInstanceOf(ImportRowsGoneError);
    expect(await writtenByJob(db.sql, input.jobId)).toEqual({ listings: 0, imports: 0 });
  });

  it('writes nothing when the rows cannot be read', async () => {
    const unreadable = Promise.reject(new Error('Connection is closed.'));
    unreadable.catch(() => undefined); // note: as the worker does; writeImport awaits it later
    const input = importOf(unreadable);
    await expect(writeImport(db.sql, input)).rejects.toThrow('Connection is closed.');
    expect(await writtenByJob(db.sql, input.jobId)).toEqual({ listings: 0, imports: 0 });
  });

  it('returns the recorded result without the rows for an import written before', async () => {
    const first = importOf(twoListings());
    await writeImport(db.sql, first);
    const again = { ...first, rowsJson: Promise.resolve(null) };
    expect(await writeImport(db.sql, again)).toEqual({ inserted: 2, skipped: 0, errors: [] });
    expect(await writtenByJob(db.sql, first.jobId)).toEqual({ listings: 2, imports: 1 });
  });
});
