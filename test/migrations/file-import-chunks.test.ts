import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { migrate } from '../../src/shared/infra/migrate.js';
import { databaseUrl } from '../support/services.js';

const MIGRATIONS = fileURLToPath(new URL('../../migrations/', import.meta.url));

/**
 * Migration 0010: a file import staged by an earlier version (a row per file row, in
 * import_file_rows) moves into chunks and claimed ids, so an upgrade in the middle of a file import
 * writes the rest of it, in file order, with its repeated-id check intact.
 */
describe('migration 0010: file imports staged in chunks', () => {
  const name = `${inject('runId')}_m10_${randomBytes(4).toString('hex')}`;
  const admin = postgres(databaseUrl(inject('postgresUrl'), 'postgres'), { max: 1, onnotice: () => {} });
  let sql: postgres.Sql;
  let before: string;

  beforeAll(async () => {
    await admin.unsafe(`create database "${name}"`);
    sql = postgres(databaseUrl(inject('postgresUrl'), name), { max: 1, onnotice: () => {} });
    // the migrations up to 0009 only, as an earlier version left the database
    before = await mkdtemp(join(tmpdir(), 'migrations-'));
    for (const file of await readdir(MIGRATIONS)) if (file < '0010') await symlink(join(MIGRATIONS, file), join(before, file));
    await migrate(sql, before);
  });
  afterAll(async () => {
    await sql?.end();
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.end();
    if (before) await rm(before, { recursive: true, force: true });
  });

  it('moves the staged rows into chunks of a thousand in file order, and their ids into the claimed ids', async () => {
    const [account] = await sql<{ id: string }[]>`insert into accounts (display_name, subscription_tier) values ('Upgrade', 'global') returning id`;
    await sql`
      insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, source)
      values ('file-1', ${account!.id}, 'listings', 'r', 2500, 0, 0, '[]', 'running', 'file')`;
    // 2,400 rows left of 2,500 (the first hundred were written), every third with an id
    await sql`
      insert into import_file_rows (job_id, index, external_id, row)
      select 'file-1', n, case when n % 3 = 0 then 'SKU-' || n end,
             jsonb_build_object('title', 'Row ' || n, 'external_id', case when n % 3 = 0 then 'SKU-' || n end)
      from generate_series(100, 2499) as n`;

    // note: the later migrations follow it; they have tests of their own
    expect((await migrate(sql)).applied[0]).toBe('0010_file_import_chunks.sql');

    const chunks = await sql<{ first_index: number; rows: number; body: string; with_external_ids: boolean }[]>`
      select first_index, rows, body, with_external_ids from import_file_chunks where job_id = 'file-1' order by first_index`;
    expect(chunks.map((chunk) => [chunk.first_index, chunk.rows])).toEqual([[100, 900], [1000, 1000], [2000, 500]]);
    expect(chunks.every((chunk) => chunk.with_external_ids)).toBe(true);
    const titles = chunks.flatMap((chunk) => (JSON.parse(chunk.body) as { title: string }[]).map((row) => row.title));
    expect(titles).toEqual(Array.from({ length: 2_400 }, (_, n) => `Row ${n + 100}`));
    const [ids] = await sql<{ n: number; first: number }[]>`select count(*)::int as n, min(index) as first from import_file_external_ids where job_id = 'file-1'`;
    expect(ids).toEqual({ n: 800, first: 102 });
    const [left] = await sql<{ exists: boolean }[]>`select to_regclass('import_file_rows') is not null as exists`;
    expect(left!.exists).toBe(false);
  });
});
