import type postgres from 'postgres';
import type { MirrorFacts, TableRow } from './soak-catalogue-log.js';

/** The account's listings by `external_id`, as the table holds them now. */
export async function readCatalogue(sql: postgres.Sql, accountId: string): Promise<Map<string, TableRow>> {
  const rows = await sql<{ externalId: string; copies: number; archived: boolean; price: number }[]>`
    select external_id as "externalId", count(*)::int as copies, bool_and(archived_at is not null) as archived, min(price_cents)::int as price
    from listings where account_id = ${accountId} and external_id is not null
    group by external_id`;
  return new Map(rows.map((row) => [row.externalId, { archived: row.archived, price: row.price, copies: row.copies }]));
}

/** The account's mirror imports, as the imports table records them, oldest first. */
export async function readMirrorFacts(sql: postgres.Sql, accountId: string): Promise<MirrorFacts[]> {
  // note: times as ms since the epoch in a float8, which holds PostgreSQL's microseconds.
  const rows = await sql<
    {
      importId: string;
      requestId: string | null;
      state: string;
      beganAt: number | null;
      acceptedAt: number;
      finishedAt: number | null;
      removalState: string | null;
      removalRows: number | null;
      base: number | null;
      inserted: number;
      updated: number;
      unchanged: number;
      skipped: number;
    }[]
  >`
    select job_id as "importId", request_id as "requestId", state,
           (extract(epoch from upload_began_at) * 1000)::float8 as "beganAt",
           (extract(epoch from created_at) * 1000)::float8 as "acceptedAt",
           (extract(epoch from finished_at) * 1000)::float8 as "finishedAt",
           removal_state as "removalState", removal_rows as "removalRows", removal_base as base,
           inserted, coalesce(updated, 0)::int as updated, coalesce(unchanged, 0)::int as unchanged, skipped
    from imports where account_id = ${accountId} and mode = 'mirror' and state <> 'uploading'
    order by created_at`;
  return rows.map((row) => ({
    importId: row.importId,
    requestId: row.requestId ?? '',
    state: row.state,
    // note: every mirror since migration 0018 has its upload's start; one without would read as never begun.
    beganAt: row.beganAt ?? -Infinity,
    acceptedAt: row.acceptedAt,
    finishedAt: row.finishedAt,
    removal: { state: row.removalState ?? 'none', rows: row.removalRows ?? 0 },
    base: row.base,
    counts: { inserted: row.inserted, updated: row.updated, unchanged: row.unchanged, skipped: row.skipped },
  }));
}

/** Whether an upload of the account is being received now (its import recorded `uploading`). */
export async function isUploading(sql: postgres.Sql, accountId: string): Promise<boolean> {
  const rows = await sql`select 1 from imports where account_id = ${accountId} and state = 'uploading' limit 1`;
  return rows.length > 0;
}
