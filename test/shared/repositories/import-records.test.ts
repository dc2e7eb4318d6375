import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSql, type Sql } from '../../../src/shared/infra/db.js';
import { encodeImportRows } from '../../../src/shared/import/rows-hand-over.js';
import { fenceUnsettledImport, findImportRecord, recordImportNotWritten, recordImportUnsettled } from '../../../src/shared/repositories/import-records.js';
import { ImportAbandonedError } from '../../../src/worker/write-errors.js';
import { writeImport, type ImportWrite } from '../../../src/worker/write-import.js';
import { ListingRowSchema } from '../../../src/shared/rows/listing-row.js';
import { validListing } from '../../support/fixtures.js';
import { commitGate } from '../../support/hold-in-transaction.js';
import { createTestDatabase, type TestDatabase } from '../../support/test-database.js';

/**
 * The fence behind every answer "nothing was written": once an import is recorded `failed`, its
 * job can never write, and an import that did write is never recorded `failed`.
 */
describe('recordImportNotWritten and writeImport', () => {
  let database: TestDatabase;
  let sql: Sql;
  let accountId: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    sql = createSql({ databaseUrl: database.url, databasePoolMax: 6 });
    accountId = await newAccount();
  });
  afterAll(async () => {
    await sql?.end();
    await database?.drop();
  });

  async function newAccount(): Promise<string> {
    const [account] = await sql<{ id: string }[]>`
      insert into accounts (display_name, subscription_tier) values ('Fenced', 'global') returning id`;
    return account!.id;
  }

  const rowError = { index: 2, reason: 'title: required', details: [{ field: 'title', code: 'required' as const, message: 'required' }] };

  function importOf(importId: string, account = accountId): ImportWrite {
    const rows = encodeImportRows([ListingRowSchema.parse(validListing()), ListingRowSchema.parse(validListing())]);
    return { importId, kind: 'listings', accountId: account, requestId: 'fence-test', total: 3, errors: [rowError], rowCount: 2, rows: rows };
  }

  const fenceOf = (importId: string, account = accountId) =>
    recordImportNotWritten(sql, { importId, accountId: account, kind: 'listings', requestId: 'fence-test', total: 3, errors: [rowError] });

  async function listingsOf(importId: string): Promise<number> {
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from listings where import_job_id = ${importId}`;
    return row!.n;
  }

  /**
   * A worker's write of the job held just before its commit: `writing` settles once `finish` is
   * called (with an error: the transaction rolls back), and `held` resolves when its rows are in.
   */
  function writeHeldBeforeCommit(importId: string) {
    const gate = commitGate();
    const writing = writeImport(sql, importOf(importId), { beforeCommit: gate.beforeCommit });
    return { writing, held: gate.reached, finish: gate.release };
  }

  it('records an import that never ran as failed, and its job then writes nothing, however often it runs', async () => {
    const importId = randomUUID();
    expect(await fenceOf(importId)).toEqual({ state: 'failed' });
    for (let run = 0; run < 2; run += 1) {
      await expect(writeImport(sql, importOf(importId))).rejects.toBeInstanceOf(ImportAbandonedError);
    }
    expect(await listingsOf(importId)).toBe(0);
    expect(await findImportRecord(sql, importId)).toEqual({ state: 'failed' });
    // A second fence of the same job finds the first.
    expect(await fenceOf(importId)).toEqual({ state: 'failed' });
  });

  it('finds an import that had committed and answers its result, never "failed"', async () => {
    const importId = randomUUID();
    const result = await writeImport(sql, importOf(importId));
    expect(result).toEqual({ inserted: 2, skipped: 1, errors: [rowError] });
    expect(await fenceOf(importId)).toEqual({ state: 'completed', result });
    expect(await listingsOf(importId)).toBe(2);
  });

  it('waits for a worker transaction that is writing the job: its commit is answered with the result', async () => {
    const importId = randomUUID();
    const { writing, held, finish } = writeHeldBeforeCommit(importId);
    await held;
    const fence = fenceOf(importId);
    setTimeout(finish, 300);
    const [written, fenced] = await Promise.all([writing, fence]);
    expect(fenced).toEqual({ state: 'completed', result: written });
    expect(await listingsOf(importId)).toBe(2);
  });

  it('waits for a worker transaction that is writing the job: its rollback leaves the fence in place', async () => {
    const importId = randomUUID();
    const { writing, held, finish } = writeHeldBeforeCommit(importId);
    await held;
    const fence = fenceOf(importId);
    setTimeout(() => finish(new Error('connection lost before commit')), 300);
    await expect(writing).rejects.toThrow('connection lost before commit');
    expect(await fence).toEqual({ state: 'failed' });
    await expect(writeImport(sql, importOf(importId))).rejects.toBeInstanceOf(ImportAbandonedError);
    expect(await listingsOf(importId)).toBe(0);
  });

  it('proves nothing while a transaction holds the job longer than its lock timeout: it throws, and records nothing', async () => {
    const importId = randomUUID();
    const { writing, held, finish } = writeHeldBeforeCommit(importId);
    await held;
    await expect(fenceOf(importId)).rejects.toThrow(/lock timeout/);
    finish();
    await writing;
    expect(await findImportRecord(sql, importId)).toMatchObject({ state: 'completed' });
  });

  const unsettledOf = (importId: string) =>
    recordImportUnsettled(sql, { importId, accountId, kind: 'listings', requestId: 'fence-test', total: 3, errors: [rowError], createdAt: Date.parse('2026-11-25T10:00:00Z') });

  async function timesOf(importId: string) {
    const [row] = await sql<{ state: string; received: number; created_at: Date; started_at: Date | null; finished_at: Date | null }[]>`
      select state, received, created_at, started_at, finished_at from imports where job_id = ${importId}`;
    return row;
  }

  async function isUnsettled(importId: string): Promise<boolean> {
    const [row] = await sql`select 1 from unsettled_imports where job_id = ${importId}`;
    return row !== undefined;
  }

  it('records an import answered 504 as unsettled without waiting for the worker transaction that holds its record', async () => {
    const importId = randomUUID();
    const { writing, held, finish } = writeHeldBeforeCommit(importId);
    await held;
    // the worker holds the record uncommitted; an insert into imports would wait for it
    await unsettledOf(importId);
    expect(await isUnsettled(importId)).toBe(true);
    expect(await timesOf(importId)).toBeUndefined();
    // a second 504 of the same import (a repeat that rejoined it) changes nothing
    await unsettledOf(importId);
    finish();
    const result = await writing;
    expect(result).toEqual({ inserted: 2, skipped: 1, errors: [rowError] });
    expect(await findImportRecord(sql, importId)).toEqual({ state: 'completed', result });
    const times = (await timesOf(importId))!;
    expect(times).toMatchObject({ state: 'completed', received: 3 });
    expect(times.started_at).not.toBeNull();
    expect(times.finished_at!.getTime()).toBeGreaterThanOrEqual(times.started_at!.getTime());
    // its record shows: fencing it now finds it completed and settles it
    expect(await fenceUnsettledImport(sql, importId)).toBe(false);
    expect(await isUnsettled(importId)).toBe(false);
    expect(await findImportRecord(sql, importId)).toEqual({ state: 'completed', result });
  });

  it('records an unsettled import whose job failed for good as failed, with the time it was accepted; its job then writes nothing', async () => {
    const importId = randomUUID();
    await unsettledOf(importId);
    expect(await fenceUnsettledImport(sql, importId)).toBe(true);
    expect(await isUnsettled(importId)).toBe(false);
    expect(await findImportRecord(sql, importId)).toEqual({ state: 'failed' });
    expect(await timesOf(importId)).toMatchObject({ state: 'failed', received: 3, finished_at: expect.any(Date) });
    expect((await timesOf(importId))!.created_at.toISOString()).toBe('2026-11-25T10:00:00.000Z');
    await expect(writeImport(sql, importOf(importId))).rejects.toBeInstanceOf(ImportAbandonedError);
    expect(await listingsOf(importId)).toBe(0);
    // a job nothing answered for gets no record
    const unanswered = randomUUID();
    expect(await fenceUnsettledImport(sql, unanswered)).toBe(false);
    expect(await findImportRecord(sql, unanswered)).toBeUndefined();
  });

  it('settles an unsettled import when the API fences it (a 503 of a repeat)', async () => {
    const importId = randomUUID();
    await unsettledOf(importId);
    expect(await fenceOf(importId)).toEqual({ state: 'failed' });
    expect(await isUnsettled(importId)).toBe(false);
  });

  it('counts an import of an account that is gone as failed: nothing can be written for it', async () => {
    const gone = await newAccount();
    await sql`delete from accounts where id = ${gone}`;
    const importId = randomUUID();
    expect(await fenceOf(importId, gone)).toEqual({ state: 'failed' });
    expect(await findImportRecord(sql, importId)).toBeUndefined();
  });
});
