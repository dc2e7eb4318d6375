import { randomBytes } from 'node:crypto';
import { copyFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { migrate } from '../../../src/shared/infra/migrate.js';
import { databaseUrl } from '../../support/services.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('../../../migrations/', import.meta.url));
const KEY_LIFECYCLE = '0017_key_lifecycle.sql';

/**
 * Migration 0017 (keys that expire, roll and work from allowed addresses) on an api_keys table
 * that already holds keys: catalogue only, its checks hold for rows written after it, and a
 * change of a key's end or addresses made in the table is notified as a revocation is.
 */
describe('migration 0017 (key lifecycle)', () => {
  const name = `${inject('runId')}_keys0017_${randomBytes(4).toString('hex')}`;
  const admin = postgres(databaseUrl(inject('postgresUrl'), 'postgres'), { max: 1, onnotice: () => {} });
  let sql: postgres.Sql;
  let before: string;
  let accountId: string;

  beforeAll(async () => {
    await admin.unsafe(`create database "${name}"`);
    sql = postgres(databaseUrl(inject('postgresUrl'), name), { max: 2, onnotice: () => {} });
    before = await mkdtemp(join(tmpdir(), 'migrations-before-0017-'));
    const files = (await readdir(MIGRATIONS_DIR)).filter((file) => /^\d+_.+\.sql$/.test(file) && file < KEY_LIFECYCLE);
    for (const file of files) await copyFile(join(MIGRATIONS_DIR, file), join(before, file));
    await migrate(sql, before);
    const [account] = await sql<{ id: string }[]>`insert into accounts (display_name, subscription_tier) values ('Keys', 'enterprise') returning id`;
    accountId = account!.id;
    await sql`
      insert into api_keys (account_id, label, key_prefix, key_hash, scopes)
      select ${accountId}, 'k' || g, lpad(to_hex(g), 8, '0'), sha256(g::text::bytea), array['listings:write']
      from generate_series(1, 20000) g`;
  }, 60_000);
  afterAll(async () => {
    await sql?.end({ timeout: 5 });
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.end();
    await rm(before, { recursive: true, force: true });
  });

  const fileOf = async () => (await sql<{ n: string }[]>`select pg_relation_filenode('api_keys')::text as n`)[0]!.n;

  it('adds its columns and checks without rewriting the table; the keys stored before are active, with no end and any address', async () => {
    const file = await fileOf();
    await copyFile(join(MIGRATIONS_DIR, KEY_LIFECYCLE), join(before, KEY_LIFECYCLE));
    expect((await migrate(sql, before)).applied).toEqual([KEY_LIFECYCLE]);
    expect(await fileOf()).toBe(file);
    const [counts] = await sql`select count(*)::int as n, count(expires_at)::int as ending, count(allowed_ips)::int as restricted, count(rolled_at)::int as rolled from api_keys`;
    expect(counts).toEqual({ n: 20_000, ending: 0, restricted: 0, rolled: 0 });
    const checks = await sql<{ conname: string; convalidated: boolean }[]>`
      select conname, convalidated from pg_constraint where conrelid = 'api_keys'::regclass and conname in ('api_keys_allowed_ips', 'api_keys_rolled_has_end') order by 1`;
    expect(checks).toEqual([
      { conname: 'api_keys_allowed_ips', convalidated: false },
      { conname: 'api_keys_rolled_has_end', convalidated: false },
    ]);
  });

  it('refuses an empty or 21-entry allowed_ips and a rolled key without an end', async () => {
    await expect(sql`update api_keys set allowed_ips = '{}' where label = 'k1'`).rejects.toMatchObject({ code: '23514' });
    await expect(sql`update api_keys set allowed_ips = ${Array.from({ length: 21 }, (_, i) => `198.51.100.${i}`)} where label = 'k1'`).rejects.toMatchObject({ code: '23514' });
    await expect(sql`update api_keys set rolled_at = now() where label = 'k1'`).rejects.toMatchObject({ code: '23514' });
    await sql`update api_keys set rolled_at = now(), expires_at = now() + interval '1 day', allowed_ips = array['203.0.113.0/24'] where label = 'k1'`;
  });

  it('finds a key by its hash with one lookup of the unique index', async () => {
    const plan = JSON.stringify(await sql`explain (format json) select id, expires_at, allowed_ips from api_keys where key_hash = sha256('7'::bytea) and not is_revoked`);
    expect(plan).toContain('"Index Name":"api_keys_key_hash_key"');
    expect(plan).not.toContain('Seq Scan');
  });

  it.each([
    ['expires_at', 'update api_keys set expires_at = now() + interval \'2 days\' where label = \'k2\''],
    ['allowed_ips', 'update api_keys set allowed_ips = array[\'198.51.100.7\'] where label = \'k3\''],
  ])('notifies the API replicas of a change of %s made in the table', async (_, statement) => {
    const listener = postgres(databaseUrl(inject('postgresUrl'), name), { max: 1, onnotice: () => {} });
    try {
      let arrived: (payload: string) => void = () => undefined;
      const notified = new Promise<string>((resolve) => (arrived = resolve));
      await listener.listen('bulk_import_auth', (payload) => arrived(payload));
      await sql.unsafe(statement);
      await expect(Promise.race([notified, new Promise((resolve) => setTimeout(() => resolve('nothing'), 2_000))])).resolves.toBe('api_keys');
    } finally {
      await listener.end({ timeout: 5 });
    }
  });
});
