import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordFileRowErrors, stageFileRows, stagedRow, type ChunkEncoding, type StagedRow } from '../../src/shared/repositories/import-files.js';
import { ListingRowSchema } from '../../src/shared/rows/listing-row.js';
import { writeFileChunk, type ChunkOutcome } from '../../src/worker/write-file-chunk.js';
import { openDatabaseWithAccount, type DatabaseWithAccount } from '../support/database-with-account.js';
import { validListing } from '../support/fixtures.js';
import { holdChunkInTransaction } from '../support/hold-in-transaction.js';
import { LISTINGS_AS_COPY, stageInChunks, stagedRowsLeft } from '../support/staged-file.js';

/**
 * The core of a whole-file import (migrations 0009, 0010): rows staged in PostgreSQL a chunk at a
 * time, written a chunk at a time, each chunk one transaction that moves its rows out of the
 * staging, so that every row is written exactly once whatever happens to the worker.
 */
describe.each([
  ['COPY text', LISTINGS_AS_COPY],
  ['JSON (an API before 0.11.0)', { format: 'json' }],
] as const)('file imports: staging and chunks (stageFileRows, writeFileChunk), chunks as %s', (_name, encoding: ChunkEncoding) => {
  let db: DatabaseWithAccount;

  beforeAll(async () => {
    db = await openDatabaseWithAccount('Files', 8);
  });
  afterAll(async () => {
    await db?.close();
  });

  /** A file import recorded as the upload leaves it: queued, with `rows` staged from position 0 in chunks of `chunkRows`; returns its id and the positions refused as repeats. */
  async function stagedFile(rows: Record<string, unknown>[], chunkRows: number, failed = 0): Promise<{ importId: string; repeats: number[] }> {
    const importId = randomUUID();
    return db.sql.begin(async (tx) => {
      await tx`
        insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, source, created_at)
        values (${importId}, ${db.accountId}, 'listings', 'file-test', ${rows.length + failed}, 0, ${failed}, '[]', 'queued', 'file', now())`;
      const staged: StagedRow[] = rows.map((row, index) => stagedRow(index, ListingRowSchema.parse(row)));
      const repeats = await stageInChunks(tx, importId, staged, chunkRows, encoding);
      return { importId, repeats };
    });
  }

  async function writeAll(importId: string): Promise<ChunkOutcome[]> {
    const outcomes: ChunkOutcome[] = [];
    for (let calls = 0; calls < 100; calls += 1) {
      const outcome = await writeFileChunk(db.sql, importId);
      outcomes.push(outcome);
      if (outcome.state !== 'written') return outcomes;
    }
    throw new Error('the import did not complete within 100 chunks');
  }

  async function recordOf(importId: string) {
    const [record] = await db.sql<{ state: string; inserted: number; updated: number | null; unchanged: number | null; processed: number | null; started_at: Date | null; finished_at: Date | null }[]>`
      select state, inserted, updated, unchanged, processed, started_at, finished_at from imports where job_id = ${importId}`;
    return record!;
  }
  const writtenBy = async (importId: string) => (await db.sql<{ n: number }[]>`select count(*)::int as n from listings where import_job_id = ${importId}`)[0]!.n;
  const stagedLeft = (importId: string) => stagedRowsLeft(db.sql, importId);
  const idsClaimed = async (importId: string) => (await db.sql<{ n: number }[]>`select count(*)::int as n from import_file_external_ids where job_id = ${importId}`)[0]!.n;

  it('refuses a later row whose external_id an earlier row of the file carries, within one batch and across batches', async () => {
    const rows = [validListing({ external_id: 'A' }), validListing({ external_id: ' A ' }), validListing({ external_id: 'B' }), validListing()];
    const { importId, repeats } = await stagedFile(rows, 10);
    expect(repeats).toEqual([1]);
    const later = await db.sql.begin((tx) => stageFileRows(tx, importId, [stagedRow(4, ListingRowSchema.parse(validListing({ external_id: 'B' })))], encoding));
    expect(later).toEqual([4]);
    expect(await stagedLeft(importId)).toBe(3);
  });

  it('writes a file a chunk at a time, in file order, each row once, then records the import completed with its counts', async () => {
    const rows = Array.from({ length: 2_500 }, (_, n) => validListing({ title: `Row ${n}`, ...(n % 2 === 0 ? { external_id: `SKU-${n}` } : {}) }));
    const { importId } = await stagedFile(rows, 1_000, 3);
    await db.sql.begin((tx) => recordFileRowErrors(tx, importId, [{ index: 2_500, reason: 'title: required', details: [{ field: 'title', code: 'required', message: 'required' }] }]));

    // file order: the first chunk holds the first thousand rows of the file
    expect(await writeFileChunk(db.sql, importId)).toMatchObject({ state: 'written', rows: 1_000 });
    const titles = await db.sql<{ title: string }[]>`select title from listings where import_job_id = ${importId}`;
    expect(new Set(titles.map((row) => row.title))).toEqual(new Set(rows.slice(0, 1_000).map((row) => row['title'])));
    expect((await recordOf(importId)).state).toBe('running');

    const outcomes = await writeAll(importId);
    expect(outcomes).toMatchObject([{ state: 'written', rows: 1_000 }, { state: 'written', rows: 500 }, { state: 'completed' }]);
    expect(await writtenBy(importId)).toBe(2_500);
    expect(await stagedLeft(importId)).toBe(0);
    // the ids its rows claimed go with the staging when it ends
    expect(await idsClaimed(importId)).toBe(0);
    const record = await recordOf(importId);
    expect(record).toMatchObject({ state: 'completed', inserted: 2_500, updated: 0, unchanged: 0, processed: 2_503 });
    expect(record.finished_at!.getTime()).toBeGreaterThanOrEqual(record.started_at!.getTime());
    // a completed import writes nothing more
    expect(await writeFileChunk(db.sql, importId)).toEqual({ state: 'ended' });
  });

  it('loses nothing and writes nothing twice when a chunk dies before its commit: the next one writes those rows', async () => {
    const { importId } = await stagedFile(Array.from({ length: 30 }, () => validListing()), 10);
    await expect(
      writeFileChunk(db.sql, importId, {
        beforeCommit: async () => {
          throw new Error('worker killed before commit');
        },
      }),
    ).rejects.toThrow('worker killed before commit');
    expect(await writtenBy(importId)).toBe(0);
    expect(await stagedLeft(importId)).toBe(30);
    expect((await recordOf(importId)).state).toBe('queued');

    await writeAll(importId);
    expect(await writtenBy(importId)).toBe(30);
    expect(await recordOf(importId)).toMatchObject({ state: 'completed', inserted: 30, processed: 30 });
  });

  it('writes each row once when several workers write chunks of one import at the same time', async () => {
    const { importId } = await stagedFile(Array.from({ length: 600 }, (_, n) => validListing({ external_id: `P-${n}` })), 50);
    await Promise.all(Array.from({ length: 4 }, () => writeAll(importId)));
    expect(await writtenBy(importId)).toBe(600);
    expect(await recordOf(importId)).toMatchObject({ state: 'completed', inserted: 600, updated: 0, unchanged: 0, processed: 600 });
  });

  /** Waits until a session of this database waits on a lock of `kind` (pg_locks' locktype) while running `query`. */
  async function waitingOn(kind: string, query: string): Promise<void> {
    await expect
      .poll(
        async () => {
          const [row] = await db.sql<{ n: number }[]>`
            select count(*)::int as n from pg_stat_activity a join pg_locks l on l.pid = a.pid and not l.granted
            where a.datname = current_database() and l.locktype = ${kind} and a.query like ${`%${query}%`}`;
          return row!.n;
        },
        { timeout: 5_000, interval: 20 },
      )
      .toBe(1);
  }

  it('writes chunks of one import side by side: a second chunk writes its rows while the first is inside its transaction', async () => {
    const { importId } = await stagedFile(Array.from({ length: 20 }, (_, n) => validListing({ title: `Side ${n}` })), 10);
    const held = holdChunkInTransaction(db.sql, importId);
    try {
      await held.started;
      const second = writeFileChunk(db.sql, importId);
      // its rows are in (not yet committed); it waits only to add its counts to the record the first holds
      await waitingOn('transactionid', 'update imports set');
      held.release();
      expect(await held.done).toMatchObject({ state: 'written', rows: 10 });
      expect(await second).toMatchObject({ state: 'written', rows: 10 });
    } finally {
      held.release();
      await held.done.catch(() => undefined);
    }
    expect(await writeFileChunk(db.sql, importId)).toEqual({ state: 'completed' });
    expect(await writtenBy(importId)).toBe(20);
    expect(await recordOf(importId)).toMatchObject({ state: 'completed', inserted: 20, processed: 20 });
  });

  it('completes an import only once its last chunk under way has committed; a chunk rolled back meanwhile is written next', async () => {
    const { importId } = await stagedFile(Array.from({ length: 10 }, () => validListing()), 10);
    const held = holdChunkInTransaction(db.sql, importId);
    await held.started;
    // nothing is left to take: the completion waits for the import's write lock
    const completing = writeFileChunk(db.sql, importId);
    await waitingOn('advisory', 'pg_advisory_xact_lock');
    expect((await recordOf(importId)).state).toBe('queued');
    held.release(new Error('worker lost its connection'));
    await expect(held.done).rejects.toThrow('worker lost its connection');
    expect(await completing).toEqual({ state: 'busy' });
    expect(await writtenBy(importId)).toBe(0);

    const again = holdChunkInTransaction(db.sql, importId);
    await again.started;
    const completed = writeFileChunk(db.sql, importId);
    await waitingOn('advisory', 'pg_advisory_xact_lock');
    again.release();
    expect(await again.done).toMatchObject({ state: 'written', rows: 10 });
    expect(await completed).toEqual({ state: 'completed' });
    expect(await writtenBy(importId)).toBe(10);
  });

  it('matches rows on external_id: a file sent again updates what changed and leaves the rest', async () => {
    const rows = Array.from({ length: 20 }, (_, n) => validListing({ title: `Lamp ${n}`, external_id: `L-${n}` }));
    const first = await stagedFile(rows, 7);
    await writeAll(first.importId);
    const again = await stagedFile(rows.map((row, n) => (n < 5 ? { ...row, title: `Lamp ${n}, new` } : row)), 7);
    await writeAll(again.importId);
    expect(await recordOf(again.importId)).toMatchObject({ state: 'completed', inserted: 0, updated: 5, unchanged: 15, processed: 20 });
    const [total] = await db.sql<{ n: number }[]>`select count(*)::int as n from listings where external_id like 'L-%'`;
    expect(total!.n).toBe(20);
  });

  it('inserts a chunk whose rows carry no external_id and matches the ids of a chunk whose rows do, in one file', async () => {
    const known = await stagedFile([validListing({ title: 'Old', external_id: 'K-1' })], 10);
    await writeAll(known.importId);
    const rows = [validListing({ title: 'New 1' }), validListing({ title: 'New 2' }), validListing({ title: 'Changed', external_id: 'K-1' }), validListing({ title: 'New 3', external_id: 'K-2' })];
    const { importId } = await stagedFile(rows, 2);
    expect(await writeAll(importId)).toMatchObject([{ state: 'written', rows: 2, changed: 2 }, { state: 'written', rows: 2, changed: 2 }, { state: 'completed' }]);
    expect(await recordOf(importId)).toMatchObject({ state: 'completed', inserted: 3, updated: 1, unchanged: 0, processed: 4 });
    const [matched] = await db.sql<{ n: number; title: string }[]>`select count(*)::int as n, max(title) as title from listings where external_id = 'K-1'`;
    expect(matched).toEqual({ n: 1, title: 'Changed' });
  });

  it('stops a cancelled import between chunks: what was written stays, nothing more is, and its staging is dropped', async () => {
    const { importId } = await stagedFile(Array.from({ length: 25 }, (_, n) => validListing({ external_id: `C-${n}` })), 10);
    expect(await writeFileChunk(db.sql, importId)).toMatchObject({ state: 'written', rows: 10 });
    await db.sql`update imports set state = 'cancelled', finished_at = now() where job_id = ${importId}`;
    expect(await writeFileChunk(db.sql, importId)).toEqual({ state: 'ended' });
    expect(await idsClaimed(importId)).toBe(0);
    expect(await writtenBy(importId)).toBe(10);
    expect(await stagedLeft(importId)).toBe(0);
    expect(await recordOf(importId)).toMatchObject({ state: 'cancelled', inserted: 10 });
  });
});
