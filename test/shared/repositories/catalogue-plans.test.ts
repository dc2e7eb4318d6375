import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ImportKind } from '../../../src/shared/import/import-kinds.js';
import { cataloguePageStatement, listCatalogueRows, type CataloguePageRequest } from '../../../src/shared/repositories/catalogue-rows.js';
import { openDatabaseWithAccount, type DatabaseWithAccount } from '../../support/database-with-account.js';

/**
 * The plans of a catalogue page (docs/catalogue.md#reading-rows-back) on a table where one
 * account holds most of the rows and another, newer, a tenth as many: every page, filter and
 * cursor of either reads the table through an index of migration 0014 (or 0005's external ids),
 * never the whole table, and reads about a page of rows, not the account's catalogue.
 *
 * note: 200,000 rows, not a million: a million listings took some 35 s to write here (their
 * checks and five indexes), past the time a test file should take. The planner's choices are
 * the same at either size; what makes them hard is one account holding most of the table.
 */

/** Rows of each kind of the account holding most of the table; and of the newer one. */
const ROWS = 200_000;
const OTHER_ROWS = 20_000;
/** every 10th row changed after it was created, every 50th also archived (2%) */
const CHANGED_EVERY = 10;
const ARCHIVED_EVERY = 50;
/** the most rows the scan of a page may read (a page is 21): far below either account's rows */
const PAGE_READ_MAX = 100;

/** A node of a plan as EXPLAIN (analyze, format json) gives it. */
interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];
const INDEX_SCANS = ['Index Scan', 'Index Only Scan', 'Bitmap Index Scan'];

let db: DatabaseWithAccount;
let otherAccountId: string;

/**
 * `count` rows of `accountId`, one statement: created a second apart from 2026-01-01, every
 * CHANGED_EVERY-th changed (updated_at) and every ARCHIVED_EVERY-th archived a week later. note:
 * the ids come from the table's default (uuid_v7), so id order is insertion order, as in use.
 */
async function fill(kind: ImportKind, accountId: string, count: number): Promise<void> {
  const created = db.sql`timestamptz '2026-01-01 00:00:00+00' + n * interval '1 second'`;
  const changed = db.sql`case when n % ${CHANGED_EVERY} = 0 then timestamptz '2026-01-01 00:00:00+00' + (n + 604800) * interval '1 second' end`;
  const archived = db.sql`case when n % ${ARCHIVED_EVERY} = 0 then timestamptz '2026-01-01 00:00:00+00' + (n + 604800) * interval '1 second' end`;
  if (kind === 'listings') {
    await db.sql`
      insert into listings (account_id, external_id, title, description, price_cents, currency, category, material, photo_urls, thumbnail_url, maker_name, created_at, updated_at, archived_at)
      select ${accountId}, 'SKU-' || n, 'Listing ' || n, 'Seeded for its plan.', n % 100000, 'USD', 'art', 'PLA',
             array['https://cdn.example.test/a.jpg'], 'https://cdn.example.test/a.jpg', 'Maker', ${created}, ${changed}, ${archived}
      from generate_series(1, ${count}) as n`;
  } else {
    await db.sql`
      insert into machines (account_id, external_id, template_id, category, manufacturer, model, created_at, updated_at, archived_at)
      select ${accountId}, 'SKU-' || n, 'tpl-' || n, 'fdm', 'Prusa Research', 'MK4', ${created}, ${changed}, ${archived}
      from generate_series(1, ${count}) as n`;
  }
}

beforeAll(async () => {
  db = await openDatabaseWithAccount('catalogue plans');
  const [other] = await db.sql<{ id: string }[]>`insert into accounts (display_name, subscription_tier) values ('another account', 'global') returning id`;
  otherAccountId = other!.id;
  for (const kind of ['listings', 'machines'] as const) {
    await fill(kind, db.accountId, ROWS);
    await fill(kind, otherAccountId, OTHER_ROWS);
    await db.sql`analyze ${db.sql(kind)}`;
  }
}, 300_000);
afterAll(async () => {
  await db?.close();
});

/** The page's statement as the repository sends it (unprepared), explained with its parameters. */
async function planOf(kind: ImportKind, accountId: string, page: CataloguePageRequest): Promise<PlanNode> {
  const { text, parameters } = cataloguePageStatement(kind, accountId, page);
  const [explained] = await db.sql.unsafe<{ 'QUERY PLAN': [{ Plan: PlanNode }] }[]>(`explain (analyze, format json) ${text}`, parameters, { prepare: false });
  return explained!['QUERY PLAN'][0].Plan;
}

/** The id at `offset` of the account's active rows, in id order. */
async function activeIdAt(kind: ImportKind, accountId: string, offset: number): Promise<string> {
  const [row] = await db.sql<{ id: string }[]>`
    select id from ${db.sql(kind)} where account_id = ${accountId} and archived_at is null order by id offset ${offset} limit 1`;
  return row!.id;
}

/** 2026-01-01 plus `seconds`. */
const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1) + seconds * 1000);

/** The two accounts: which, and how many rows of each kind they hold. */
const ACCOUNTS: [string, () => string, number][] = [
  ['the account holding most of the table', () => db.accountId, ROWS],
  ['a newer account with a tenth as many', () => otherAccountId, OTHER_ROWS],
];

describe.each(['listings', 'machines'] as const)('a page of %s', (kind) => {
  describe.each(ACCOUNTS)('of %s', (_account, accountOf, rows) => {
    /**
     * Each page the API asks for, the indexes its scan may use, and the most rows it may read:
     * about a page, but for updated_since when the planner walks the ids (below).
     */
    const afterCursor = [`${kind}_account_id_idx`, `${kind}_pkey`];
    const pages: [string, (accountId: string) => Promise<CataloguePageRequest>, string[], number][] = [
      ['the first page of active rows', async () => ({ limit: 20, archived: false }), [`${kind}_account_id_idx`], PAGE_READ_MAX],
      ['a page after a cursor half way', async (id) => ({ limit: 20, archived: false, startingAfter: await activeIdAt(kind, id, rows / 2) }), afterCursor, PAGE_READ_MAX],
      // note: after the newer account's last rows only a few rows of the table follow: the planner
      // may read those by the primary key and sort them, as cheap
      ['the last page', async (id) => ({ limit: 20, archived: false, startingAfter: await activeIdAt(kind, id, rows - rows / ARCHIVED_EVERY - 5) }), afterCursor, PAGE_READ_MAX],
      ['external_id', async () => ({ limit: 20, archived: false, externalId: `SKU-${Math.floor(rows * 0.77) + 1}` }), [`${kind}_account_external_id_key`], PAGE_READ_MAX],
      // note: the rows changed in the account's last 500 seconds, 50 of them, all among its newest
      // rows. The planner reads them through the time's index, or, when the table's statistics
      // (every account's times) make them look common, walks the ids: then it reads the account's
      // rows up to them, never another account's.
      ['updated_since, few rows changed since', async () => ({ limit: 20, archived: false, updatedSince: at(rows + 604800 - 500) }), [`${kind}_account_changed_idx`, `${kind}_account_id_idx`], rows],
      ['updated_since, every row changed since', async () => ({ limit: 20, archived: false, updatedSince: at(0) }), [`${kind}_account_id_idx`], PAGE_READ_MAX],
      ['archived=true', async () => ({ limit: 20, archived: true }), [`${kind}_archived_idx`], PAGE_READ_MAX],
      ['archived=true after a cursor', async (id) => ({ limit: 20, archived: true, startingAfter: await activeIdAt(kind, id, rows / 2) }), [`${kind}_archived_idx`, `${kind}_pkey`], PAGE_READ_MAX],
    ];

    it.each(pages)('%s: an index scan of the table, no sequential scan, few rows read', async (_what, request, indexes, readMax) => {
      const accountId = accountOf();
      const page = await request(accountId);
      const nodes = nodesOf(await planOf(kind, accountId, page));
      expect(nodes.filter((node) => node['Node Type'] === 'Seq Scan')).toEqual([]);
      const scans = nodes.filter((node) => INDEX_SCANS.includes(node['Node Type']));
      expect(scans).toHaveLength(1);
      expect(indexes).toContain(scans[0]!['Index Name']);
      const read = ((scans[0]!['Actual Rows'] ?? 0) + (scans[0]!['Rows Removed by Filter'] ?? 0)) * (scans[0]!['Actual Loops'] ?? 1);
      expect(read, `${scans[0]!['Index Name']} read ${read} rows`).toBeLessThanOrEqual(readMax);
      // and the page is the one asked for: the statement explained is the one the list sends
      const listed = await listCatalogueRows(db.sql, kind, accountId, page);
      expect(listed.data.length).toBeGreaterThan(0);
      expect(listed.data.length).toBeLessThanOrEqual(20);
      expect(listed.data.every((row) => (row.archived_at !== null) === page.archived)).toBe(true);
    });
  });

  it('reads no row of another account, whose rows share the same external ids and times', async () => {
    const listed = await listCatalogueRows(db.sql, kind, db.accountId, { limit: 100, archived: false, externalId: 'SKU-5' });
    expect(listed.data).toHaveLength(1);
    const owner = (await db.sql<{ account_id: string }[]>`select account_id from ${db.sql(kind)} where id = ${listed.data[0]!.id}`)[0]!.account_id;
    expect(owner).toBe(db.accountId);
  });
});
