import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countFileImportsInProgress, dropUpload, recordUploadStarted, sweepAbandonedUploads, touchUploads } from '../../src/shared/repositories/file-uploads.js';
import { recordFileRowErrors, stageFileRows, stagedRow } from '../../src/shared/repositories/import-files.js';
import { ListingRowSchema } from '../../src/shared/rows/listing-row.js';
import { openDatabaseWithAccount, type DatabaseWithAccount } from '../support/database-with-account.js';
import { validListing } from '../support/fixtures.js';
import { rowError } from '../support/row-errors.js';
import { LISTINGS_AS_COPY } from '../support/staged-file.js';

/**
 * Uploads whose API process died (docs/operators.md#file-imports): not heard of for 30 s, they no
 * longer hold a place under the account's cap, and the workers' sweep deletes them with what they
 * staged; an upload still heard of, and an accepted import, are left alone.
 */
describe('abandoned uploads (sweepAbandonedUploads, countFileImportsInProgress)', () => {
  let db: DatabaseWithAccount;

  beforeAll(async () => {
    db = await openDatabaseWithAccount('Upload Sweep Prints');
  });
  afterAll(async () => {
    await db?.close();
  });

  /** An upload begun, a few rows and a failed one staged, last heard of `silentMs` ago. */
  async function upload(silentMs: number): Promise<string> {
    const importId = randomUUID();
    await db.sql.begin(async (tx) => {
      await recordUploadStarted(tx, { importId, accountId: db.accountId, kind: 'listings', update: 'replace', mirror: undefined, requestId: 'sweep-test' });
      await stageFileRows(tx, importId, [0, 1, 2].map((index) => stagedRow(index, ListingRowSchema.parse(validListing({ external_id: `S-${index}` })))), LISTINGS_AS_COPY);
      await recordFileRowErrors(tx, importId, [rowError(3, 'title', 'required')]);
      await tx`update imports set upload_seen_at = clock_timestamp() - make_interval(secs => ${silentMs / 1_000}) where job_id = ${importId}`;
    });
    return importId;
  }

  async function left(importId: string) {
    const [row] = await db.sql<{ imports: number; chunks: number; ids: number; errors: number }[]>`
      select (select count(*)::int from imports where job_id = ${importId}) as imports,
             (select count(*)::int from import_file_chunks where job_id = ${importId}) as chunks,
             (select count(*)::int from import_file_external_ids where job_id = ${importId}) as ids,
             (select count(*)::int from import_file_errors where job_id = ${importId}) as errors`;
    return row!;
  }

  it('deletes an upload not heard of for 30 s with all it staged, and keeps one heard of, and one touched since', async () => {
    const abandoned = await upload(31_000);
    const alive = await upload(5_000);
    const revived = await upload(40_000);
    await touchUploads(db.sql, [revived]);
    expect(await countFileImportsInProgress(db.sql, { accountId: db.accountId })).toBe(2);

    expect(await sweepAbandonedUploads(db.sql, { limit: 100 })).toBe(1);
    expect(await left(abandoned)).toEqual({ imports: 0, chunks: 0, ids: 0, errors: 0 });
    expect(await left(alive)).toEqual({ imports: 1, chunks: 1, ids: 3, errors: 1 });
    expect(await left(revived)).toEqual({ imports: 1, chunks: 1, ids: 3, errors: 1 });
  });

  it('never touches an accepted import, however old its upload', async () => {
    const accepted = await upload(3_600_000);
    await db.sql`update imports set state = 'queued' where job_id = ${accepted}`;
    await touchUploads(db.sql, [accepted]);
    expect(await sweepAbandonedUploads(db.sql, { limit: 100 })).toBe(0);
    expect(await left(accepted)).toMatchObject({ imports: 1, chunks: 1 });
    const [seen] = await db.sql<{ upload_seen_at: Date | null }[]>`select upload_seen_at from imports where job_id = ${accepted}`;
    expect(seen!.upload_seen_at!.getTime()).toBeLessThan(Date.now() - 3_000_000);
  });
});

describe('dropUpload', () => {
  let db: DatabaseWithAccount;

  beforeAll(async () => {
    db = await openDatabaseWithAccount('Upload Drop Prints');
  });
  afterAll(async () => {
    await db?.close();
  });

  it('gives up the upload\'s place under the cap before its staged rows are deleted, and deletes them', async () => {
    const importId = randomUUID();
    await db.sql.begin(async (tx) => {
      await recordUploadStarted(tx, { importId, accountId: db.accountId, kind: 'listings', update: 'replace', mirror: undefined, requestId: 'drop-test' });
      await stageFileRows(tx, importId, [stagedRow(0, ListingRowSchema.parse(validListing({ external_id: 'D-0' })))], LISTINGS_AS_COPY);
    });
    expect(await countFileImportsInProgress(db.sql, { accountId: db.accountId })).toBe(1);
    // the delete waits behind a transaction that holds the upload's record; the place is given up meanwhile
    const holder = await db.sql.reserve();
    try {
      await holder`begin`;
      await holder`select 1 from import_file_chunks where job_id = ${importId} for update`;
      const dropping = dropUpload(db.sql, importId);
      await expect.poll(() => countFileImportsInProgress(db.sql, { accountId: db.accountId }), { timeout: 5_000, interval: 20 }).toBe(0);
      await holder`commit`;
      expect(await dropping).toBe(true);
    } finally {
      holder.release();
    }
    const [left] = await db.sql<{ n: number }[]>`select (select count(*) from imports where job_id = ${importId}) + (select count(*) from import_file_chunks where job_id = ${importId})::int as n`;
    expect(Number(left!.n)).toBe(0);
  });
});
