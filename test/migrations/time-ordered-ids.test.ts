import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

/** Migration 0004: listings and machines get UUID version 7 ids, ordered by creation time. */
describe('time-ordered ids (uuid_v7)', () => {
  let database: TestDatabase;
  let sql: postgres.Sql;

  beforeAll(async () => {
    database = await createTestDatabase();
    sql = postgres(database.url, { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await sql?.end();
    await database?.drop();
  });

  it('makes RFC 9562 version 7 ids carrying the current Unix time in milliseconds', async () => {
    const before = Date.now();
    const ids = (await sql<{ id: string }[]>`select uuid_v7()::text as id from generate_series(1, 1000)`).map((r) => r.id);
    const after = Date.now();
    expect(new Set(ids).size).toBe(1000);
    for (const id of ids) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      const ms = parseInt(id.replace(/-/g, '').slice(0, 12), 16);
      // note: the database's clock and ours are the same machine's, give or take a second.
      expect(ms).toBeGreaterThanOrEqual(before - 1_000);
      expect(ms).toBeLessThanOrEqual(after + 1_000);
    }
  });

  it('is the default id of listings and machines, so later rows sort after earlier ones', async () => {
    const [account] = await sql<{ id: string }[]>`
      insert into accounts (display_name, subscription_tier) values ('Ids', 'global') returning id`;
    const listingIds: string[] = [];
    const machineIds: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const [listing] = await sql<{ id: string }[]>`
        insert into listings (account_id, title, description, price_cents, currency, category, material, photo_urls, thumbnail_url, maker_name)
        values (${account!.id}, 't', 'd', 1, 'USD', 'art', 'PLA', array['https://cdn.example.test/a.jpg'], 'https://cdn.example.test/a.jpg', 'm')
        returning id::text`;
      const [machine] = await sql<{ id: string }[]>`
        insert into machines (account_id, template_id, category, manufacturer, model)
        values (${account!.id}, 'tpl', 'fdm', 'Prusa', 'MK4') returning id::text`;
      listingIds.push(listing!.id);
      machineIds.push(machine!.id);
      await new Promise((resolve) => setTimeout(resolve, 3));
    }
    for (const ids of [listingIds, machineIds]) {
      expect(ids.every((id) => id[14] === '7')).toBe(true);
      expect([...ids].sort()).toEqual(ids);
    }
  });
});
