import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabaseWithAccount, type DatabaseWithAccount } from '../support/database-with-account.js';
import { hostileString, urlArb } from '../support/hostile-rows.js';

/**
 * Migration 0012 rewrote 0007's row checks to cost less (issue 24); these hold each function to
 * 0007's own, value for value, on hostile input. 0007's functions are created again from its file,
 * in a schema of their own, beside the ones the migrations leave.
 */

const ROW_LIMITS_SQL = readFileSync(new URL('../../migrations/0007_row_limits.sql', import.meta.url), 'utf8');
/** 0007's `create function` statements, as the file has them */
const FUNCTIONS_0007 = ROW_LIMITS_SQL.match(/^create function [\s\S]*?\$\$;$/gm) ?? [];

/** What PostgreSQL's text can hold: no NUL, and a lone surrogate as the U+FFFD it becomes in UTF-8. */
const storable = (s: string) => s.replaceAll('\u0000', '').replace(/\p{Surrogate}/gu, '\ufffd');
const entry = fc.option(fc.oneof(hostileString, urlArb).map(storable), { nil: null, freq: 8 });
const entries = fc.array(entry, { maxLength: 12 });

describe("migration 0012's row checks answer as 0007's", () => {
  let db: DatabaseWithAccount;

  beforeAll(async () => {
    db = await openDatabaseWithAccount('Checks');
    await db.sql.begin(async (tx) => {
      await tx`create schema v0007`;
      await tx`set local search_path to v0007`;
      for (const statement of FUNCTIONS_0007) await tx.unsafe(statement);
    });
  });
  afterAll(async () => {
    await db?.close();
  });

  /** `fn` of the migrations and of 0007 on the same arguments, as text ('true', 'false' or 'null'). */
  async function both(call: (schema: string) => string, args: unknown[]): Promise<{ now: string; v0007: string }> {
    const [row] = await db.sql.unsafe<{ now: string; v0007: string }[]>(
      `select coalesce((${call('public')})::text, 'null') as now, coalesce((${call('v0007')})::text, 'null') as v0007`,
      args as never[],
    );
    return row!;
  }
  /** the JSON array `$1` as text[], nulls kept. note: sent as text: a json parameter would be encoded again */
  const textArray = '(select array_agg(e order by n) from json_array_elements_text($1::text::json) with ordinality as a(e, n))';

  it('answer with an empty search_path, as pg_restore has it while it loads the rows a check reads', async () => {
    const [row] = await db.sql.begin(async (tx) => {
      await tx`set local search_path to ''`;
      return tx`
        select public.https_urls_fit(array['https://cdn.example.test/a.jpg', 'javascript:alert(1)']) as urls,
               public.https_url_fits('https://cdn.example.test/a.jpg') as url,
               public.text_entries_fit(array['ok', repeat('t', 81)], 80) as entries,
               public.external_id_fits('SKU-1') as id`;
    });
    expect(row).toEqual({ urls: false, url: true, entries: false, id: true });
  });

  it("finds 0007's three functions in its file", () => {
    expect(FUNCTIONS_0007.map((statement) => /^create function (\w+)/.exec(statement)![1])).toEqual([
      'text_entries_fit', 'https_urls_fit', 'external_id_fits',
    ]);
  });

  it('https_urls_fit: every entry an https URL', async () => {
    await fc.assert(
      fc.asyncProperty(entries, async (urls) => {
        const { now, v0007 } = await both((s) => `${s}.https_urls_fit(coalesce(${textArray}, '{}'))`, [JSON.stringify(urls)]);
        expect(now).toBe(v0007);
      }),
      { numRuns: 300 },
    );
  });

  it("https_url_fits, the thumbnail's check, answers as https_urls_fit of the one URL", async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(hostileString, urlArb).map(storable), async (url) => {
        const [row] = await db.sql<{ now: boolean; v0007: boolean }[]>`
          select public.https_url_fits(${url}) as now, v0007.https_urls_fit(array[${url}::text]) as v0007`;
        expect(row!.now).toBe(row!.v0007);
      }),
      { numRuns: 300 },
    );
  });

  it('text_entries_fit: every entry present and at most so many characters', async () => {
    await fc.assert(
      fc.asyncProperty(entries, fc.constantFrom(0, 1, 40, 80, 200), async (texts, maxLength) => {
        const { now, v0007 } = await both((s) => `${s}.text_entries_fit(coalesce(${textArray}, '{}'), $2::int)`, [JSON.stringify(texts), maxLength]);
        expect(now).toBe(v0007);
      }),
      { numRuns: 300 },
    );
  });

  it('external_id_fits: 1 to 100 characters, trimmed, no control or bidirectional character; null passes', async () => {
    await fc.assert(
      fc.asyncProperty(entry, async (id) => {
        const { now, v0007 } = await both((s) => `${s}.external_id_fits($1::text)`, [id]);
        expect(now).toBe(v0007);
      }),
      { numRuns: 300 },
    );
  });

  it('answers alike on the edges: empty and null arrays, null entries, arrays of more than one dimension, the length limits', async () => {
    const edges = [
      "'{}'", 'null', "'{NULL}'", "'{{a,b},{c,NULL}}'", "'{{https://a.test/x,https://b.test/y}}'", "array[repeat('t', 80)]", "array[repeat('t', 81)]",
      // URLs of 2,048 and 2,049 characters
      "array['https://a.test/' || repeat('p', 2033)]", "array['https://a.test/' || repeat('p', 2034)]",
    ];
    for (const literal of edges) {
      for (const fn of ['https_urls_fit', 'text_entries_fit']) {
        const args = fn === 'text_entries_fit' ? `${literal}::text[], 80` : `${literal}::text[]`;
        const { now, v0007 } = await both((s) => `${s}.${fn}(${args})`, []);
        expect({ fn, literal, answer: now }).toEqual({ fn, literal, answer: v0007 });
      }
    }
  });
});
