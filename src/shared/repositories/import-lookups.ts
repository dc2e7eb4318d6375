import type { Sql } from '../infra/db.js';
import type { ImportKind } from '../import/import-kinds.js';
import type { RowError } from '../rows/row-errors.js';

/**
 * The statements behind the import resource (docs/imports.md): one import, an account's imports
 * newest first, an import's failed rows in index order. Every statement is scoped to the account,
 * so another account's import is found exactly as an unknown one: not at all.
 */

export type ImportState = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';

export interface ImportView {
  id: string;
  kind: ImportKind;
  source: 'request' | 'file';
  state: ImportState;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  received: number;
  processed: number;
  inserted: number;
  updated: number;
  unchanged: number;
  skipped: number;
}

/**
 * The columns of an ImportView. note: an import recorded before migration 0008 has no `received`:
 * its rows were all done, so it is the sum of its counts; a request import has no `processed`
 * column: it is done all at once, so it is the same sum (0 written until it completes, its
 * refused rows counted from the start).
 */
const VIEW = `
  job_id as id, kind, source, state,
  created_at as "createdAt", started_at as "startedAt", finished_at as "finishedAt",
  coalesce(received, inserted + coalesce(updated, 0) + coalesce(unchanged, 0) + skipped) as received,
  coalesce(processed, case when state = 'completed' then inserted + coalesce(updated, 0) + coalesce(unchanged, 0) else 0 end + skipped) as processed,
  case when state = 'completed' then inserted else 0 end as inserted,
  case when state = 'completed' then coalesce(updated, 0) else 0 end as updated,
  case when state = 'completed' then coalesce(unchanged, 0) else 0 end as unchanged,
  skipped`;

export async function findImport(sql: Sql, accountId: string, importId: string): Promise<ImportView | undefined> {
  const [found] = await sql<ImportView[]>`
    select ${sql.unsafe(VIEW)} from imports where job_id = ${importId} and account_id = ${accountId}`;
  return found;
}

export interface Page<T> {
  data: T[];
  hasMore: boolean;
}

/**
 * The account's imports, newest first (ties by id), `limit` of them after `startingAfter`;
 * undefined when `startingAfter` names no import of the account.
 */
export async function listImports(sql: Sql, accountId: string, page: { limit: number; startingAfter?: string }): Promise<Page<ImportView> | undefined> {
  let after = sql``;
  if (page.startingAfter !== undefined) {
    const [cursor] = await sql<{ createdAt: Date; id: string }[]>`
      select created_at as "createdAt", job_id as id from imports where job_id = ${page.startingAfter} and account_id = ${accountId}`;
    if (!cursor) return undefined;
    after = sql`and (created_at, job_id) < (${cursor.createdAt}, ${cursor.id})`;
  }
  // note: one more than asked says whether there is more (imports_account_created_idx).
  const rows = await sql<ImportView[]>`
    select ${sql.unsafe(VIEW)} from imports
    where account_id = ${accountId} ${after}
    order by created_at desc, job_id desc
    limit ${page.limit + 1}`;
  return { data: rows.slice(0, page.limit), hasMore: rows.length > page.limit };
}

/**
 * An import's failed rows in index order, `limit` of them after the index `startingAfter`;
 * undefined when the account has no such import.
 */
export async function listImportErrors(
  sql: Sql,
  accountId: string,
  importId: string,
  page: { limit: number; startingAfter?: number },
): Promise<Page<RowError> | undefined> {
  const [found] = await sql<{ errors: RowError[] }[]>`
    select (
      select coalesce(jsonb_agg(entry order by (entry->>'index')::int), '[]')
      from (
        select entry from jsonb_array_elements(i.errors) as entry
        where (entry->>'index')::int > ${page.startingAfter ?? -1}
        order by (entry->>'index')::int
        limit ${page.limit + 1}
      ) as page
    ) as errors
    from imports as i where job_id = ${importId} and account_id = ${accountId}`;
  if (!found) return undefined;
  return { data: found.errors.slice(0, page.limit), hasMore: found.errors.length > page.limit };
}
