import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sql } from '../../src/shared/infra/db.js';
import { listImports } from '../../src/shared/repositories/import-lookups.js';
import { bearer } from '../support/fixtures.js';
import { newPartner } from '../support/bulk-endpoint.js';
import { startTestService, type TestAccount, type TestService } from '../support/test-service.js';

/**
 * `GET /v1/api/imports` a page at a time (docs/imports.md), when imports share a millisecond:
 * created_at keeps microseconds, which a JavaScript Date drops, so the place of `starting_after`
 * has to be compared in PostgreSQL, not sent back as a Date.
 */

interface ImportPage {
  data: { id: string; state: string }[];
  has_more: boolean;
}

/**
 * An import written straight to the tables, `tick` microseconds after a common instant that is
 * not a whole millisecond: a record in `imports`, an import answered 504 whose record does not
 * show yet (`unsettled_imports` alone), or one whose record shows but whose entry there was not
 * swept yet (both, one import).
 */
interface SeededImport {
  id: string;
  tick: number;
  kind: 'record' | 'unsettled' | 'settled';
}

const CURSOR_REFUSED = { error: 'starting_after: no such import', code: 'unknown_starting_after' };

/**
 * Ten imports within one millisecond (.123000 to .123999), four of them at the very same
 * microsecond; the others a millisecond before and after, so pages cross milliseconds too.
 */
const TICKS: [number, SeededImport['kind']][] = [
  [-1_000, 'record'],
  [0, 'record'],
  [456, 'record'],
  [456, 'record'],
  [456, 'record'],
  [456, 'unsettled'],
  [457, 'record'],
  [500, 'unsettled'],
  [700, 'settled'],
  [998, 'unsettled'],
  [999, 'record'],
  [1_000, 'record'],
];

let service: TestService;

beforeAll(async () => {
  service = await startTestService({ worker: false });
});
afterAll(async () => {
  await service?.close();
});

async function seedImports(account: TestAccount, ticks: [number, SeededImport['kind']][]): Promise<SeededImport[]> {
  const seeded = ticks.map(([tick, kind]) => ({ id: randomUUID(), tick, kind }));
  for (const { id, tick, kind } of seeded) {
    const createdAt = service.sql`timestamptz '2026-11-20 10:00:00.123000+00' + ${tick} * interval '1 microsecond'`;
    if (kind !== 'unsettled') {
      await service.sql`
        insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, created_at, started_at, finished_at)
        values (${id}, ${account.id}, 'listings', 'paging-test', 1, 1, 0, '[]', 'completed', ${createdAt}, ${createdAt}, ${createdAt})`;
    }
    if (kind !== 'record') {
      await service.sql`
        insert into unsettled_imports (job_id, account_id, kind, request_id, received, skipped, errors, created_at)
        values (${id}, ${account.id}, 'listings', 'paging-test', 1, 0, '[]', ${createdAt})`;
    }
  }
  return seeded;
}

/** Newest first, ties by id (job ids are uuids here: they compare in PostgreSQL as in JavaScript). */
const newestFirst = (imports: SeededImport[]) => [...imports].sort((a, b) => b.tick - a.tick || (a.id < b.id ? 1 : -1)).map((i) => i.id);

function list(key: string, query: string) {
  return service.request({ method: 'GET', url: `/v1/api/imports${query}`, headers: bearer(key) });
}

async function listed(key: string, query: string): Promise<ImportPage> {
  const res = await list(key, query);
  expect(res.statusCode, res.body).toBe(200);
  return res.json<ImportPage>();
}

/** Every page at `limit` from the first, following `starting_after` while `has_more`. */
async function allPages(key: string, limit: number): Promise<ImportPage[]> {
  const pages: ImportPage[] = [];
  let after = '';
  for (;;) {
    const page = await listed(key, `?limit=${limit}${after}`);
    pages.push(page);
    if (!page.has_more) return pages;
    expect(page.data.length).toBe(limit);
    after = `&starting_after=${page.data.at(-1)!.id}`;
    expect(pages.length).toBeLessThan(50);
  }
}

describe('GET /v1/api/imports with imports sharing a millisecond', () => {
  let key: string;
  let order: string[];
  let othersImportId: string;

  beforeAll(async () => {
    const partner = await newPartner(service);
    key = partner.key;
    order = newestFirst(await seedImports(partner.account, TICKS));
    // another account's imports at the very same instants: never listed, never a cursor
    const other = await newPartner(service);
    othersImportId = (await seedImports(other.account, TICKS.filter(([tick]) => tick === 456)))[0]!.id;
  });

  it('orders the seeded imports as PostgreSQL does (the test\'s own expectation is sound), ten of them in one millisecond', async () => {
    const rows = await service.sql<{ id: string; createdAt: string }[]>`
      select job_id as id, created_at::text as "createdAt" from imports where job_id = any(${order})
      union all
      select job_id, created_at::text from unsettled_imports as u where job_id = any(${order}) and not exists (select 1 from imports as i where i.job_id = u.job_id)
      order by 2 desc, 1 desc`;
    expect(rows.map((r) => r.id)).toEqual(order);
    expect(rows.filter((r) => r.createdAt.startsWith('2026-11-20 10:00:00.123')).length).toBe(10);
    expect(new Set(rows.map((r) => r.createdAt)).size).toBe(9);
  });

  it('lists them all on one page, newest first, an import answered 504 once whether or not its record shows', async () => {
    const page = await listed(key, '?limit=100');
    expect(page.data.map((i) => i.id)).toEqual(order);
    expect(page.has_more).toBe(false);
  });

  it.each([1, 2, 3, 5, 11, 12])('pages through all 12 with limit=%i: each once, in order, has_more false on the last page only', async (limit) => {
    const pages = await allPages(key, limit);
    expect(pages.flatMap((p) => p.data.map((i) => i.id))).toEqual(order);
    expect(pages.map((p) => p.has_more)).toEqual([...pages.slice(1).map(() => true), false]);
    expect(pages).toHaveLength(Math.ceil(order.length / limit));
  });

  it('starts after any one of them, a record or an import answered 504, with exactly those that follow it', async () => {
    for (const [place, id] of order.entries()) {
      const page = await listed(key, `?limit=100&starting_after=${id}`);
      expect({ after: id, ids: page.data.map((i) => i.id), has_more: page.has_more }).toEqual({ after: id, ids: order.slice(place + 1), has_more: false });
      const one = await listed(key, `?limit=1&starting_after=${id}`);
      expect({ after: id, ids: one.data.map((i) => i.id), has_more: one.has_more }).toEqual({
        after: id,
        ids: order.slice(place + 1, place + 2),
        has_more: place + 2 < order.length,
      });
    }
  });

  it('answers another account\'s import id as starting_after with 400, as an unknown one, naming nothing of that account', async () => {
    for (const cursor of [othersImportId, randomUUID()]) {
      const res = await list(key, `?starting_after=${cursor}`);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual(CURSOR_REFUSED);
      expect(res.body).not.toContain(cursor);
    }
  });
});

/** A node of a plan as EXPLAIN (format json) gives it. */
interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Index Cond'?: string;
  'Actual Rows'?: number;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

describe('listImports\' statement', () => {
  /** A pool of one connection on the service's database that keeps every statement it sends, with its parameters. */
  async function recordingPool(): Promise<{ sql: Sql; sent: { query: string; parameters: unknown[] }[]; end: () => Promise<void> }> {
    const sent: { query: string; parameters: unknown[] }[] = [];
    const sql = postgres(service.config.databaseUrl, {
      max: 1,
      onnotice: () => {},
      transform: { undefined: null },
      debug: (_connection, query, parameters) => sent.push({ query, parameters: parameters as unknown[] }),
    });
    await sql`select 1`; // note: the connection's own first queries (its types) are not the list's
    sent.length = 0;
    return { sql: sql as unknown as Sql, sent, end: () => sql.end({ timeout: 5 }) };
  }

  it('reads a page after a cursor from the account and created_at indexes of both tables, from the cursor\'s place on, a page of them and not every older import', async () => {
    const partner = await newPartner(service);
    // note: 20,000 records, three to a millisecond, and the planner's statistics of them, so that
    // the plan is the one taken for an account with many imports.
    await service.sql`
      insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, created_at)
      select 'many-' || lpad(n::text, 5, '0'), ${partner.account.id}, 'listings', 'paging-test', 1, 1, 0, '[]', 'completed',
             timestamptz '2026-11-01 00:00:00.000500+00' + (n / 3) * interval '1 millisecond' + (n % 3) * interval '1 microsecond'
      from generate_series(1, 20000) as n`;
    await seedImports(partner.account, TICKS.filter(([, kind]) => kind !== 'record'));
    await service.sql`analyze imports`;
    await service.sql`analyze unsettled_imports`;
    const [cursor] = await service.sql<{ id: string }[]>`
      select job_id as id from imports where account_id = ${partner.account.id} and job_id like 'many-%' order by created_at desc, job_id desc offset 10000 limit 1`;
    const pool = await recordingPool();
    try {
      const page = await listImports(pool.sql, partner.account.id, { limit: 20, startingAfter: cursor!.id });
      const expected = await service.sql<{ id: string }[]>`
        select job_id as id from imports where account_id = ${partner.account.id} and job_id like 'many-%' order by created_at desc, job_id desc offset 10001 limit 20`;
      expect(page?.data.map((i) => i.id)).toEqual(expected.map((r) => r.id));
      expect(page?.hasMore).toBe(true);
      const listing = pool.sent.filter((s) => /order by/i.test(s.query));
      expect(listing).toHaveLength(1);
      // note: sequential scans off, as on tables too large to read whole (unsettled_imports holds
      // a few rows here): the indexes the planner then picks are the ones it takes on large tables.
      const plan = await service.sql.begin(async (tx) => {
        await tx`set local enable_seqscan = off`;
        const [explained] = await tx.unsafe<{ 'QUERY PLAN': [{ Plan: PlanNode }] }[]>(`explain (analyze, format json) ${listing[0]!.query}`, listing[0]!.parameters as postgres.ParameterOrJSON<never>[]);
        return explained!['QUERY PLAN'][0].Plan;
      });
      const scans = nodesOf(plan).filter((node) => node['Index Name']?.endsWith('_account_created_idx'));
      expect(scans.map((node) => [node['Relation Name'], node['Index Name'], node['Index Cond']?.replace(/'[^']*'/g, "'…'").replace(/\$\d+/g, '$n')])).toEqual([
        ['imports', 'imports_account_created_idx', "((account_id = '…'::uuid) AND (created_at <= $n))"],
        ['unsettled_imports', 'unsettled_imports_account_created_idx', "((account_id = '…'::uuid) AND (created_at <= $n))"],
      ]);
      // the page's 21 and the one after them that ends their created_at, not the 10,000 older records
      expect(scans[0]!['Actual Rows']).toBeLessThan(30);
      expect(nodesOf(plan).map((node) => node['Node Type'])).not.toContain('Seq Scan');
    } finally {
      await pool.end();
    }
  });
});
