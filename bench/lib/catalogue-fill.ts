import type postgres from 'postgres';

/**
 * The rows of the `catalogue` section, written in SQL (one `insert ... select` each), so that a
 * million rows take seconds, not the minutes imports would. Every row is created a day ago and
 * never changed since: older than any import of the section, as a partner's catalogue is.
 */

/**
 * `perAccount` listings for each of `accountIds`, with `external_id` `<prefix><n>` (n from 0),
 * shaped like bench/lib/rows.ts's: a 40-character title, a description of some 500 characters,
 * three photos and four tags, so that a page of them weighs what a partner's page does.
 */
export async function fillCatalogueListings(sql: postgres.Sql, accountIds: readonly string[], perAccount: number, prefix: string): Promise<void> {
  await sql`
    insert into listings (account_id, external_id, title, description, price_cents, currency, category, material, photo_urls,
                          thumbnail_url, color, tags, print_time_hours, maker_name, maker_photo_url, created_at)
    select a.id, ${prefix} || g, 'Catalogue listing ' || a.n || '-' || g || ' articulated dragon', repeat('matte layer finish ', 26),
           500 + g % 10000, 'USD', 'miniatures', 'PLA',
           array['https://cdn.example.com/c/' || a.n || '-' || g || '-1.jpg', 'https://cdn.example.com/c/' || a.n || '-' || g || '-2.jpg',
                 'https://cdn.example.com/c/' || a.n || '-' || g || '-3.jpg'],
           'https://cdn.example.com/c/' || a.n || '-' || g || '-1.jpg', 'red', array['dragon', 'flexi', 'gift', 'batch-' || g % 100], 3.5,
           'Bench', 'https://cdn.example.com/avatar.png', now() - interval '1 day'
    from unnest(${sql.array(accountIds as string[])}::uuid[]) with ordinality as a(id, n), generate_series(0, ${perAccount - 1}) as g`;
}

/**
 * `count` listings of one account, `external_id` `M-<n>` (n from 0): each exactly what the
 * service stores for line n of the mirror file (bench/lib/mirror-file.ts), so that a line naming
 * one finds nothing to change (a nightly mirror of a catalogue that mostly stayed the same).
 */
export async function fillMirrorListings(sql: postgres.Sql, accountId: string, count: number): Promise<void> {
  await sql`
    insert into listings (account_id, external_id, title, description, price_cents, currency, category, material, photo_urls,
                          thumbnail_url, maker_name, maker_photo_url, created_at)
    select ${accountId}, 'M-' || g, 'L' || g, 'd', 1200, 'USD', 'art', 'PLA', array['https://c.example/' || g || '.jpg'],
           'https://c.example/' || g || '.jpg', a.display_name, a.avatar_url, now() - interval '1 day'
    from accounts as a, generate_series(0, ${count - 1}) as g
    where a.id = ${accountId}`;
}

/** The id of each account's listing at `offset` in creation order (by id), in the accounts' order: a cursor into the middle of its catalogue. */
export async function listingIdsAt(sql: postgres.Sql, accountIds: readonly string[], offset: number): Promise<string[]> {
  const rows = await sql<{ account_id: string; id: string }[]>`
    select a.id as account_id,
           (select l.id from listings as l where l.account_id = a.id and l.archived_at is null order by l.id offset ${offset} limit 1) as id
    from unnest(${sql.array(accountIds as string[])}::uuid[]) as a(id)`;
  const byAccount = new Map(rows.map((row) => [row.account_id, row.id]));
  return accountIds.map((id) => {
    const found = byAccount.get(id);
    if (found === undefined || found === null) throw new Error(`bench: account ${id} has no listing at ${offset}`);
    return found;
  });
}
