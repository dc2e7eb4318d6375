import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountGoneError, ImportRowCountError, ImportRowsGoneError, ImportRowsRefusedError } from '../../src/worker/write-errors.js';
import { writeImport, type ImportWrite } from '../../src/worker/write-import.js';
import { ListingRowSchema } from '../../src/shared/rows/listing-row.js';
import { validListing } from '../support/fixtures.js';
import { openDatabaseWithAccount, type DatabaseWithAccount } from '../support/database-with-account.js';
import { commitGate } from '../support/hold-in-transaction.js';
import { writtenByImport } from '../support/written-by-import.js';
import { statementLoggingPool } from '../support/statement-log.js';
import { encodeRowsAs, inEuros, ROWS_ENCODINGS } from '../support/encode-rows.js';

/**
 * writeImport takes the rows (JSON text, or `COPY` text as bytes) or their fetch still under way
 * (the worker reads them from Redis while it checks the job), and writes the import's record and
 * its rows in one statement (JSON: one round trip; `COPY`: in the transaction the copy began);
 * rows that turn out to be gone or unreadable leave nothing behind, and so does everything that
 * stops the statement from recording the import.
 */
describe.each(ROWS_ENCODINGS)('writeImport, rows as %s', (encoding) => {
  let db: DatabaseWithAccount;

  beforeAll(async () => {
    db = await openDatabaseWithAccount('Writer');
  });
  afterAll(async () => {
    await db?.close();
  });

  const twoListings = () => encodeRowsAs(encoding, 'listings', [ListingRowSchema.parse(validListing()), ListingRowSchema.parse(validListing())]);

  function importOf(rows: ImportWrite['rows']): ImportWrite {
    return { importId: randomUUID(), kind: 'listings', accountId: db.accountId, requestId: 'write-import-test', total: 2, errors: [], rowCount: 2, rows };
  }

  it('writes rows given as they came', async () => {
    const input = importOf(twoListings());
    expect(await writeImport(db.sql, input)).toEqual({ inserted: 2, skipped: 0, errors: [] });
    expect(await writtenByImport(db.sql, input.importId)).toEqual({ listings: 2, imports: 1 });
  });

  it('sends nothing before the rows arrive, then the record and the rows in one statement (after their copy)', async () => {
    const counting = await statementLoggingPool(db.sql);
    let deliver!: (rows: string | Uint8Array) => void;
    try {
      const input = importOf(new Promise<string | Uint8Array>((resolve) => (deliver = resolve)));
      const writing = writeImport(counting.sql, input);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(counting.sent).toEqual([]);
      deliver(twoListings());
      expect(await writing).toEqual({ inserted: 2, skipped: 0, errors: [] });
      const firstWords = counting.sent.map((query) => query.trim().split(/\s+/)[0]!.toLowerCase());
      expect(firstWords).toEqual(encoding === 'json' ? ['with'] : ['begin', 'select', 'copy', 'insert', 'commit']);
      expect(await writtenByImport(db.sql, input.importId)).toEqual({ listings: 2, imports: 1 });
    } finally {
      deliver(twoListings()); // note: a write still waiting for its rows would hold the pool open
      await counting.sql.end();
    }
  });

  it.runIf(encoding === 'copy')('fails at once, for good, having written nothing, when COPY refuses the rows (a line with a column too many)', async () => {
    const rows = Buffer.from(twoListings() as Uint8Array).toString('utf8').replace('\n', '\textra\n');
    const input = importOf(new TextEncoder().encode(rows));
    const started = performance.now();
    await expect(writeImport(db.sql, input)).rejects.toBeInstanceOf(ImportRowsRefusedError);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(await writtenByImport(db.sql, input.importId)).toEqual({ listings: 0, imports: 0 });
    // the connection is fit for the next import
    const next = importOf(twoListings());
    expect(await writeImport(db.sql, next)).toEqual({ inserted: 2, skipped: 0, errors: [] });
  });

  it('writes nothing, not even the record, when the rows are not as many as announced', async () => {
    const input = { ...importOf(twoListings()), rowCount: 3, total: 3 };
    await expect(writeImport(db.sql, input)).rejects.toBeInstanceOf(ImportRowCountError);
    expect(await writtenByImport(db.sql, input.importId)).toEqual({ listings: 0, imports: 0 });
  });

  it('writes nothing when the account is gone', async () => {
    const [gone] = await db.sql<{ id: string }[]>`insert into accounts (display_name, subscription_tier) values ('Gone', 'global') returning id`;
    await db.sql`delete from accounts where id = ${gone!.id}`;
    const input = { ...importOf(twoListings()), accountId: gone!.id };
    await expect(writeImport(db.sql, input)).rejects.toBeInstanceOf(AccountGoneError);
    expect(await writtenByImport(db.sql, input.importId)).toEqual({ listings: 0, imports: 0 });
  });

  it('answers a job that ran before with its record, whatever rows it holds now, and inserts none of them', async () => {
    const first = importOf(twoListings());
    const written = await writeImport(db.sql, first);
    const broken = inEuros(twoListings()); // note: breaks a table constraint if ever inserted
    expect(await writeImport(db.sql, { ...first, rows: broken })).toEqual(written);
    expect(await writtenByImport(db.sql, first.importId)).toEqual({ listings: 2, imports: 1 });
  });

  /** Whether a statement of this database waits for a lock (the record another transaction holds). */
  async function waitsForALock(): Promise<boolean> {
    const [waiting] = await db.sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`;
    return waiting!.n > 0;
  }

  /**
   * Two runs of one job at once (a stalled job run again while its first run still writes): the
   * first is held before its commit, its record and rows in; the second's statement writes its
   * rows, then waits on the record's primary key.
   */
  async function twoRunsAtOnce() {
    const first = importOf(twoListings());
    const gate = commitGate();
    const firstWriting = writeImport(db.sql, first, { beforeCommit: gate.beforeCommit });
    await gate.reached;
    const secondWriting = writeImport(db.sql, { ...first, rows: twoListings() });
    await expect.poll(waitsForALock, { timeout: 5_000 }).toBe(true);
    return { importId: first.importId, firstWriting, secondWriting, release: gate.release };
  }

  it('lets a second run of a job that runs twice at once wait for the first, then answer its result, having written nothing', async () => {
    const { importId, firstWriting, secondWriting, release } = await twoRunsAtOnce();
    release();
    const written = await firstWriting;
    expect(await secondWriting).toEqual(written);
    expect(await writtenByImport(db.sql, importId)).toEqual({ listings: 2, imports: 1 });
  });

  it('lets a second run of a job that runs twice at once write it when the first rolls back', async () => {
    const { importId, firstWriting, secondWriting, release } = await twoRunsAtOnce();
    release(new Error('connection lost before commit'));
    await expect(firstWriting).rejects.toThrow('connection lost before commit');
    expect(await secondWriting).toEqual({ inserted: 2, skipped: 0, errors: [] });
    expect(await writtenByImport(db.sql, importId)).toEqual({ listings: 2, imports: 1 });
  });

  it('writes nothing, not even the record, when the rows are gone', async () => {
    const input = importOf(Promise.resolve(null));
    await expect(writeImport(db.sql, input)).rejects.toBeInstanceOf(ImportRowsGoneError);
    expect(await writtenByImport(db.sql, input.importId)).toEqual({ listings: 0, imports: 0 });
  });

  it('writes nothing when the rows cannot be read', async () => {
    const unreadable = Promise.reject(new Error('Connection is closed.'));
    unreadable.catch(() => undefined); // note: as the worker does; writeImport awaits it later
    const input = importOf(unreadable);
    await expect(writeImport(db.sql, input)).rejects.toThrow('Connection is closed.');
    expect(await writtenByImport(db.sql, input.importId)).toEqual({ listings: 0, imports: 0 });
  });

  it('returns the recorded result without the rows for an import written before', async () => {
    const first = importOf(twoListings());
    await writeImport(db.sql, first);
    const again = { ...first, rows: Promise.resolve(null) };
    expect(await writeImport(db.sql, again)).toEqual({ inserted: 2, skipped: 0, errors: [] });
    expect(await writtenByImport(db.sql, first.importId)).toEqual({ listings: 2, imports: 1 });
  });
});
