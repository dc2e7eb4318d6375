import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { exportBody } from '../../src/api/export/export-stream.js';
import { insertAccount, useTestPool } from '../support/database-with-account.js';

/**
 * An export's `ended` (export-stream.ts) is when its API process gives its export slot back
 * (EXPORT_POOL_MAX): it must not come before the export's transaction has ended and its
 * connection is back in the pool, however the export went. Cut short, the COPY is cancelled, read
 * out and rolled back first; a slot given back before that would let the next export wait for a
 * connection instead of being answered 503 at once.
 */
describe('exportBody: `ended` once the transaction is over', () => {
  // note: two connections, the export's and the one that watches it
  const db = useTestPool(2);

  /** The sessions of the database, but this one, that are inside a statement or a transaction, or last ran a COPY. */
  const exportSessions = () =>
    db.sql<{ state: string; query: string }[]>`
      select state, query from pg_stat_activity
      where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'
        and (state <> 'idle' or query ilike 'copy%')`;

  it('comes after a body cut short has had its COPY cancelled and its transaction rolled back', async () => {
    const accountId = await insertAccount(db.sql, 'Exporter');
    // note: enough rows that PostgreSQL still has most of them to send when the body is cut
    await db.sql`
      insert into listings (account_id, external_id, title, description, price_cents, currency, category, material, photo_urls, thumbnail_url, maker_name)
      select ${accountId}, 'SKU-' || n, 'Listing ' || n, repeat('d', 2000), n, 'USD', 'art', 'PLA', array['https://cdn.example.test/a.jpg'], 'https://cdn.example.test/a.jpg', 'Seeder'
      from generate_series(1, 40000) as n`;
    const request = { kind: 'listings' as const, accountId, filters: { archived: false }, format: 'ndjson' as const, gzip: false, idleMs: 60_000 };
    const { body, ended } = await exportBody(db.sql, request, pino({ level: 'silent' }));
    await new Promise((resolve) => body.once('data', resolve));
    body.pause();
    expect((await exportSessions()).length).toBe(1);
    body.destroy(new Error('the client went away'));
    await ended;
    // at once: the export's session is idle, outside any transaction, its last statement not the COPY
    expect(await exportSessions()).toEqual([]);
  });

  it('comes after a body read to its end has had its transaction committed', async () => {
    const accountId = await insertAccount(db.sql, 'Reader');
    await db.sql`
      insert into listings (account_id, external_id, title, description, price_cents, currency, category, material, photo_urls, thumbnail_url, maker_name)
      select ${accountId}, 'SKU-' || n, 'Listing ' || n, 'd', n, 'USD', 'art', 'PLA', array['https://cdn.example.test/a.jpg'], 'https://cdn.example.test/a.jpg', 'Seeder'
      from generate_series(1, 500) as n`;
    const request = { kind: 'listings' as const, accountId, filters: { archived: false }, format: 'ndjson' as const, gzip: false, idleMs: 60_000 };
    const { body, ended } = await exportBody(db.sql, request, pino({ level: 'silent' }));
    let lines = 0;
    for await (const chunk of body) lines += (chunk as Buffer).toString('utf8').split('\n').length - 1;
    expect(lines).toBe(500);
    await ended;
    expect(await exportSessions()).toEqual([]);
  });
});
