import { randomBytes } from 'node:crypto';
import { copyFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ensureDatabase } from '../../../src/shared/infra/ensure-database.js';
import { migrate } from '../../../src/shared/infra/migrate.js';
import { databaseUrl } from '../../support/services.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('../../../migrations/', import.meta.url));
const migrationFiles = (await readdir(MIGRATIONS_DIR)).filter((file) => /^\d+_.+\.sql$/.test(file)).sort();

/** The tables and columns other programs rely on (docs/contracts.md#tables: columns may be added, never renamed). */
const CONTRACT_COLUMNS: Record<string, string[]> = {
  accounts: ['id', 'display_name', 'subscription_tier', 'is_owner', 'has_completed_onboarding', 'avatar_url'],
  api_keys: ['id', 'account_id', 'label', 'key_prefix', 'key_hash', 'scopes', 'is_revoked', 'last_used_at', 'created_at'],
  machines: [
    'id', 'account_id', 'template_id', 'category', 'manufacturer', 'model', 'model_number', 'nickname', 'capabilities',
    'is_skill_station', 'verification_status', 'created_at',
  ],
  listings: [
    'id', 'account_id', 'title', 'description', 'price_cents', 'currency', 'category', 'material', 'photo_urls',
    'thumbnail_url', 'color', 'tags', 'print_time_hours', 'is_available', 'allows_custom_orders', 'maker_name',
    'maker_photo_url', 'created_at',
  ],
};
/** Columns whose type docs/contracts.md#tables names, as information_schema's udt_name. */
const CONTRACT_TYPES: [table: string, column: string, udtName: string][] = [
  ['accounts', 'id', 'uuid'],
  ['api_keys', 'id', 'uuid'],
  ['api_keys', 'scopes', '_text'],
  ['machines', 'capabilities', '_text'],
  ['listings', 'photo_urls', '_text'],
  ['listings', 'tags', '_text'],
];

const runId = inject('runId');
const admin = postgres(databaseUrl(inject('postgresUrl'), 'postgres'), { max: 1, onnotice: () => {} });
const pools: postgres.Sql[] = [];
const databases: string[] = [];

function uniqueName(label: string): string {
  const name = `${runId}_${label}_${randomBytes(4).toString('hex')}`;
  databases.push(name);
  return name;
}

async function createEmptyDatabase(label: string): Promise<string> {
  const name = uniqueName(label);
  await admin.unsafe(`create database "${name}"`);
  return name;
}

function connect(database: string): postgres.Sql {
  const sql = postgres(databaseUrl(inject('postgresUrl'), database), { max: 1, onnotice: () => {} });
  pools.push(sql);
  return sql;
}

async function recordedVersions(sql: postgres.Sql): Promise<string[]> {
  const rows = await sql<{ version: string }[]>`select version from schema_migrations order by version`;
  return rows.map((row) => row.version);
}

afterAll(async () => {
  await Promise.all(pools.map((sql) => sql.end({ timeout: 5 })));
  for (const name of databases) await admin.unsafe(`drop database if exists "${name.replaceAll('"', '""')}" with (force)`);
  await admin.end();
});

describe('migrate', () => {
  let sql: postgres.Sql;

  beforeAll(async () => {
    sql = connect(await createEmptyDatabase('migrate'));
  });

  it('finds the numbered migration files', () => {
    expect(migrationFiles).toContain('0001_initial.sql');
  });

  it('applies every migration file in order on an empty database and records each', async () => {
    const { applied } = await migrate(sql);
    expect(applied).toEqual(migrationFiles);
    expect(await recordedVersions(sql)).toEqual(migrationFiles);
  });

  it('applies nothing when run again', async () => {
    const { applied } = await migrate(sql);
    expect(applied).toEqual([]);
    expect(await recordedVersions(sql)).toEqual(migrationFiles);
  });

  it('creates the tables and columns other programs rely on (docs/contracts.md#tables)', async () => {
    const rows = await sql<{ table_name: string; column_name: string; udt_name: string }[]>`
      select table_name, column_name, udt_name from information_schema.columns
      where table_schema = 'public' and table_name in ${sql(Object.keys(CONTRACT_COLUMNS))}`;
    for (const [table, columns] of Object.entries(CONTRACT_COLUMNS)) {
      const present = rows.filter((row) => row.table_name === table).map((row) => row.column_name);
      expect(present, table).toEqual(expect.arrayContaining(columns));
    }
    for (const [table, column, udtName] of CONTRACT_TYPES) {
      expect(rows.find((row) => row.table_name === table && row.column_name === column)?.udt_name, `${table}.${column}`).toBe(udtName);
    }
  });

  it('lets two processes migrate the same empty database at once: both succeed, each file applied and recorded once', async () => {
    const database = await createEmptyDatabase('migrate_race');
    const first = connect(database);
    const second = connect(database);
    // note: connect both first, so the two migrations really start together.
    await Promise.all([first`select 1`, second`select 1`]);

    const [a, b] = await Promise.all([migrate(first), migrate(second)]);

    // One applies everything and the other finds it done; both applying a file would list it twice.
    expect([...a.applied, ...b.applied].sort()).toEqual(migrationFiles);
    expect(await recordedVersions(first)).toEqual(migrationFiles);
  });
});

/**
 * Migrations 0005 (external ids), 0007 (the row rules as table checks) and 0012 (the same checks,
 * cheaper) on tables as a partner-heavy deployment has them: they must not rewrite them (the
 * table's file stays the same), and what they add works on new rows. note: the tests run in order
 * on the same million rows, each applying its migration alone from a copy of the files.
 */
// note: PostgreSQL alone, reached directly: the Redis Cluster and PgBouncer runs of the suite
// would repeat it unchanged, so it runs in the plain run only.
const plainRun = !process.env.TEST_REDIS_CLUSTER && !process.env.TEST_PGBOUNCER;

describe.runIf(plainRun)('migrations on tables that already hold a million rows', () => {
  const EXTERNAL_IDS = '0005_external_ids.sql';
  const ROW_LIMITS = '0007_row_limits.sql';
  const CHEAPER_ROW_CHECKS = '0012_cheaper_row_checks.sql';
  /** the checks 0007 adds, all NOT VALID */
  const ROW_CHECKS = [
    'listings_external_id_characters', 'listings_photo_urls_https', 'listings_tags_length', 'listings_thumbnail_url_https',
    'machines_capabilities_size', 'machines_external_id_characters', 'machines_identifiers_length',
  ];
  let sql: postgres.Sql;
  let before: string;

  beforeAll(async () => {
    sql = connect(await createEmptyDatabase('migrate_big'));
    before = await mkdtemp(join(tmpdir(), 'migrations-before-0005-'));
    for (const file of migrationFiles.filter((f) => f < EXTERNAL_IDS)) await copyFile(join(MIGRATIONS_DIR, file), join(before, file));
    await migrate(sql, before);
  }, 60_000);
  afterAll(async () => {
    await rm(before, { recursive: true, force: true });
  });

  const fileOf = async (table: string) => (await sql<{ n: string }[]>`select pg_relation_filenode(${table})::text as n`)[0]!.n;

  it('0005 adds the columns, checks and indexes without rewriting the tables, and they hold for new rows', async () => {
    const [account] = await sql<{ id: string }[]>`insert into accounts (display_name, subscription_tier) values ('Big', 'global') returning id`;
    await sql`
      insert into listings (account_id, title, description, price_cents, currency, category, material, photo_urls, thumbnail_url, maker_name)
      select ${account!.id}, 'Listing ' || g, 'text', g, 'USD', 'art', 'PLA', array['https://cdn.example.test/a.jpg'], 'https://cdn.example.test/a.jpg', 'Big'
      from generate_series(1, 1000000) g`;
    await sql`
      insert into machines (account_id, template_id, category, manufacturer, model)
      select ${account!.id}, 'tpl-' || g, 'fdm', 'Prusa', 'MK4' from generate_series(1, 200000) g`;
    const files = { listings: await fileOf('listings'), machines: await fileOf('machines'), imports: await fileOf('imports') };

    // note: 0005 alone, from the same copy of the files: the later migrations have tests of their own
    await copyFile(join(MIGRATIONS_DIR, EXTERNAL_IDS), join(before, EXTERNAL_IDS));
    const started = performance.now();
    expect((await migrate(sql, before)).applied).toEqual([EXTERNAL_IDS]);
    console.log(`migration 0005 on 1,000,000 listings and 200,000 machines: ${Math.round(performance.now() - started)} ms`);

    expect({ listings: await fileOf('listings'), machines: await fileOf('machines'), imports: await fileOf('imports') }).toEqual(files);
    const [counts] = await sql`select count(*)::int as n, count(external_id)::int as with_id from listings`;
    expect(counts).toEqual({ n: 1_000_000, with_id: 0 });
    const indexes = await sql<{ indexrelid: string; indisvalid: boolean; indisunique: boolean }[]>`
      select indexrelid::regclass::text as indexrelid, indisvalid, indisunique from pg_index
      where indexrelid::regclass::text in ('listings_account_external_id_key', 'machines_account_external_id_key') order by 1`;
    expect(indexes).toEqual([
      { indexrelid: 'listings_account_external_id_key', indisvalid: true, indisunique: true },
      { indexrelid: 'machines_account_external_id_key', indisvalid: true, indisunique: true },
    ]);

    // the checks were added without reading the rows, and hold for new ones
    await expect(sql`update listings set external_id = ${'x'.repeat(101)} where price_cents = 1`).rejects.toMatchObject({ code: '23514' });
    await expect(sql`update machines set external_id = '' where template_id = 'tpl-1'`).rejects.toMatchObject({ code: '23514' });
    await sql`update listings set external_id = 'SKU-1' where price_cents = 1`;
    await expect(sql`update listings set external_id = 'SKU-1' where price_cents = 2`).rejects.toMatchObject({ code: '23505' });
  }, 120_000);

  it('0007 adds its checks without reading or rewriting the tables: rows stored before stay, every row written after is checked', async () => {
    for (const file of migrationFiles.filter((f) => f > EXTERNAL_IDS && f < ROW_LIMITS)) await copyFile(join(MIGRATIONS_DIR, file), join(before, file));
    await migrate(sql, before);
    // note: a row of each table that breaks a new check, as one stored by an older version could
    await sql`update listings set photo_urls = array['http://cdn.example.test/a.jpg'] where price_cents = 3`;
    await sql`update machines set template_id = repeat('t', 300) where template_id = 'tpl-3'`;
    const files = { listings: await fileOf('listings'), machines: await fileOf('machines') };

    await copyFile(join(MIGRATIONS_DIR, ROW_LIMITS), join(before, ROW_LIMITS));
    const started = performance.now();
    expect((await migrate(sql, before)).applied).toEqual([ROW_LIMITS]);
    console.log(`migration 0007 on 1,000,000 listings and 200,000 machines: ${Math.round(performance.now() - started)} ms`);

    expect({ listings: await fileOf('listings'), machines: await fileOf('machines') }).toEqual(files);
    const checks = await sql<{ conname: string; convalidated: boolean }[]>`
      select conname, convalidated from pg_constraint where conname in ${sql(ROW_CHECKS)} order by conname`;
    expect(checks).toEqual(ROW_CHECKS.map((conname) => ({ conname, convalidated: false })));
    const [counts] = await sql`
      select (select count(*)::int from listings) as listings, (select count(*)::int from machines) as machines,
             (select count(*)::int from listings where photo_urls[1] like 'http:%') as http,
             (select count(*)::int from machines where char_length(template_id) > 200) as long`;
    expect(counts).toEqual({ listings: 1_000_000, machines: 200_000, http: 1, long: 1 });

    // every row written after is checked, an update of a row stored before included
    const refused = (constraint: string) => ({ code: '23514', constraint_name: constraint });
    await expect(sql`update listings set photo_urls = array['javascript:alert(1)'] where price_cents = 2`).rejects.toMatchObject(refused('listings_photo_urls_https'));
    await expect(sql`update listings set tags = array[repeat('t', 81)] where price_cents = 2`).rejects.toMatchObject(refused('listings_tags_length'));
    await expect(sql`update machines set capabilities = array_fill('c'::text, array[101]) where template_id = 'tpl-2'`).rejects.toMatchObject(refused('machines_capabilities_size'));
    await expect(sql`update machines set external_id = ${'asset\u0007'} where template_id = 'tpl-2'`).rejects.toMatchObject(refused('machines_external_id_characters'));
    await expect(sql`update listings set title = 'still http' where price_cents = 3`).rejects.toMatchObject(refused('listings_photo_urls_https'));
    await sql`update listings set tags = array[repeat('t', 80)], external_id = 'SKU-2' where price_cents = 2`;
  }, 120_000);

  it('0012 makes the checks cheaper without reading or rewriting the tables: rows stored before stay, the same rows are refused', async () => {
    for (const file of migrationFiles.filter((f) => f > ROW_LIMITS && f < CHEAPER_ROW_CHECKS)) await copyFile(join(MIGRATIONS_DIR, file), join(before, file));
    await migrate(sql, before);
    const files = { listings: await fileOf('listings'), machines: await fileOf('machines') };

    await copyFile(join(MIGRATIONS_DIR, CHEAPER_ROW_CHECKS), join(before, CHEAPER_ROW_CHECKS));
    const started = performance.now();
    expect((await migrate(sql, before)).applied).toEqual([CHEAPER_ROW_CHECKS]);
    console.log(`migration 0012 on 1,000,000 listings and 200,000 machines: ${Math.round(performance.now() - started)} ms`);

    expect({ listings: await fileOf('listings'), machines: await fileOf('machines') }).toEqual(files);
    const checks = await sql<{ conname: string; convalidated: boolean }[]>`
      select conname, convalidated from pg_constraint where conname in ${sql(ROW_CHECKS)} order by conname`;
    expect(checks).toEqual(ROW_CHECKS.map((conname) => ({ conname, convalidated: false })));
    const [stored] = await sql`select count(*)::int as http from listings where photo_urls[1] like 'http:%'`;
    expect(stored).toEqual({ http: 1 });

    const refused = (constraint: string) => ({ code: '23514', constraint_name: constraint });
    await expect(sql`update listings set thumbnail_url = 'javascript:alert(1)' where price_cents = 4`).rejects.toMatchObject(refused('listings_thumbnail_url_https'));
    await expect(sql`update listings set photo_urls = array['https://cdn.example.test/a.jpg', null] where price_cents = 4`).rejects.toMatchObject(refused('listings_photo_urls_https'));
    await expect(sql`update listings set tags = array[repeat('t', 81)] where price_cents = 4`).rejects.toMatchObject(refused('listings_tags_length'));
    await expect(sql`update listings set external_id = ${' SKU'} where price_cents = 4`).rejects.toMatchObject(refused('listings_external_id_characters'));
    await expect(sql`update machines set capabilities = array['fdm', null] where template_id = 'tpl-4'`).rejects.toMatchObject(refused('machines_capabilities_size'));
    await expect(sql`update listings set title = 'still http' where price_cents = 3`).rejects.toMatchObject(refused('listings_photo_urls_https'));
    await sql`update listings set thumbnail_url = 'HTTPS://CDN.EXAMPLE.TEST/b.jpg', tags = array[repeat('t', 80)], external_id = 'SKU-4' where price_cents = 4`;
  }, 120_000);
});

describe('ensureDatabase', () => {
  async function exists(name: string): Promise<boolean> {
    const rows = await admin`select 1 from pg_database where datname = ${name}`;
    return rows.length === 1;
  }

  it('creates a missing database, then reports it already there', async () => {
    // note: upper case and a hyphen, so the name must be quoted to survive as given.
    const name = uniqueName('Ensure-Me');
    const url = databaseUrl(inject('postgresUrl'), name);
    expect(await exists(name)).toBe(false);

    expect(await ensureDatabase(url)).toEqual({ created: true });
    expect(await exists(name)).toBe(true);
    expect(await ensureDatabase(url)).toEqual({ created: false });
  });

  it('lets several processes ensure the same missing database at once: one creates it, none fails', async () => {
    const name = uniqueName('ensure_race');
    const url = databaseUrl(inject('postgresUrl'), name);

    const results = await Promise.all([ensureDatabase(url), ensureDatabase(url), ensureDatabase(url)]);

    expect(results.filter((result) => result.created)).toHaveLength(1);
    expect(await exists(name)).toBe(true);
  });
});
