import type postgres from 'postgres';
import type { Sql } from '../infra/db.js';
import type { ImportKind } from '../import/import-kinds.js';
import type { ImportAction } from '../import/row-removal-job.js';
import type { RowError } from '../rows/row-errors.js';

/**
 * The statements behind the import resource (docs/imports.md): one import, an account's imports
 * newest first, an import's failed rows in index order. Every statement is scoped to the account,
 * so another account's import is found exactly as an unknown one: not at all.
 */

export type ImportState = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';

/** A mirror's removal of the rows its file left out (docs/catalogue.md#mirror); null columns for every other import. */
export interface RemovalView {
  removalMissing: 'archive' | 'delete' | null;
  removalMaxPercent: number | null;
  removalState: 'pending' | 'done' | 'held' | 'skipped' | null;
  removalRows: number | null;
}

export interface ImportView extends RemovalView {
  id: string;
  kind: ImportKind;
  source: 'request' | 'file';
  /** `upsert`, or `archive` / `delete` the rows a request names (docs/catalogue.md#archive-and-delete) */
  action: ImportAction;
  mode: 'upsert' | 'mirror';
  state: ImportState;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  received: number;
  processed: number;
  inserted: number;
  updated: number;
  unchanged: number;
  archived: number;
  deleted: number;
  skipped: number;
}

/**
 * Whether an import's record shows what it wrote. note: a request import is written all at once,
 * so it shows its written rows once it completed (0 until then, and when it failed); a file import
 * is written a chunk at a time, each chunk adding to its counts as it commits, so it shows what its
 * chunks wrote in every state: while queued or running, and after it was cancelled (those rows
 * stay).
 */
const SHOWS_WRITTEN = `(source = 'file' or state = 'completed')`;

/**
 * The columns of an ImportView. note: an import recorded before migration 0008 has no `received`:
 * its rows were all done, so it is the sum of its counts. `processed` is a file import's own column
 * (its refused rows plus the rows its chunks wrote), null until its first chunk; a request import
 * has none: it is done all at once, so it is the same sum (0 written until it completes, its
 * refused rows counted from the start).
 */
export const IMPORT_VIEW_COLUMNS = `
  job_id as id, kind, source, action, mode, state,
  created_at as "createdAt", started_at as "startedAt", finished_at as "finishedAt",
  coalesce(received, inserted + coalesce(updated, 0) + coalesce(unchanged, 0) + skipped) as received,
  coalesce(processed, case when ${SHOWS_WRITTEN} then inserted + coalesce(updated, 0) + coalesce(unchanged, 0) + coalesce(archived, 0) + coalesce(deleted, 0) else 0 end + skipped) as processed,
  case when ${SHOWS_WRITTEN} then inserted else 0 end as inserted,
  case when ${SHOWS_WRITTEN} then coalesce(updated, 0) else 0 end as updated,
  case when ${SHOWS_WRITTEN} then coalesce(unchanged, 0) else 0 end as unchanged,
  case when ${SHOWS_WRITTEN} then coalesce(archived, 0) else 0 end as archived,
  case when ${SHOWS_WRITTEN} then coalesce(deleted, 0) else 0 end as deleted,
  skipped,
  removal_missing as "removalMissing", removal_max_percent as "removalMaxPercent", removal_state as "removalState", removal_rows as "removalRows"`;

/** An import answered 504 whose record has not shown yet: running, its refused rows known. */
const UNSETTLED = `
  job_id as id, kind, 'request' as source, action, 'upsert' as mode, 'running' as state,
  created_at as "createdAt", null::timestamptz as "startedAt", null::timestamptz as "finishedAt",
  received, skipped as processed, 0 as inserted, 0 as updated, 0 as unchanged, 0 as archived, 0 as deleted, skipped,
  null::text as "removalMissing", null::int as "removalMaxPercent", null::text as "removalState", null::int as "removalRows"`;

/**
 * The account's newest `rows` imports, after `before` when given, as one relation: the records,
 * and the imports answered 504 whose record does not show yet (its worker's transaction may be
 * writing it uncommitted: once committed, the record is read instead).
 * note: `before`, the order and `rows` are applied inside each branch, which then reads its
 * table's account and created_at index from the cursor's place on and stops after `rows` imports
 * (ties on created_at put in id order as they come): a condition holding a subquery on the union
 * as a whole is not pushed down into its branches, and the union sorted whole would read every
 * older import of the account for each page.
 */
function imports(sql: Sql, accountId: string, page: { rows: number; before: postgres.PendingQuery<postgres.Row[]> | undefined }) {
  const recordsBefore = page.before ? sql`and (created_at, job_id) < ${page.before}` : sql``;
  const unsettledBefore = page.before ? sql`and (u.created_at, u.job_id) < ${page.before}` : sql``;
  return sql`(
    (select ${sql.unsafe(IMPORT_VIEW_COLUMNS)} from imports where account_id = ${accountId} and state <> 'uploading' ${recordsBefore}
     order by created_at desc, job_id desc limit ${page.rows})
    union all
    (select ${sql.unsafe(UNSETTLED)} from unsettled_imports as u
     where u.account_id = ${accountId} ${unsettledBefore} and not exists (select 1 from imports as i where i.job_id = u.job_id)
     order by u.created_at desc, u.job_id desc limit ${page.rows})
  ) as account_imports`;
}

/**
 * The place of the account's import `importId` in the list, (created_at, id), as a row subquery:
 * by primary key in both tables, the record when it shows. note: no row when the account has no
 * such import, and then nothing compares below it.
 */
function placeOf(sql: Sql, accountId: string, importId: string) {
  return sql`(
    select r.created_at, r.job_id from imports as r where r.job_id = ${importId} and r.account_id = ${accountId} and r.state <> 'uploading'
    union all
    select s.created_at, s.job_id from unsettled_imports as s
    where s.job_id = ${importId} and s.account_id = ${accountId} and not exists (select 1 from imports as i where i.job_id = s.job_id)
  )`;
}

/**
 * One import of the account. note: by primary key in both tables, whether the id is another
 * account's or nobody's: the same two lookups either way.
 */
export async function findImport(sql: Sql, accountId: string, importId: string): Promise<ImportView | undefined> {
  const [found] = await sql<ImportView[]>`
    select ${sql.unsafe(IMPORT_VIEW_COLUMNS)} from imports where job_id = ${importId} and account_id = ${accountId} and state <> 'uploading'
    union all
    select ${sql.unsafe(UNSETTLED)} from unsettled_imports as u
    where u.job_id = ${importId} and u.account_id = ${accountId} and not exists (select 1 from imports as i where i.job_id = u.job_id)`;
  return found;
}

export interface Page<T> {
  data: T[];
  hasMore: boolean;
}

/**
 * The account's imports, newest first (ties by id), `limit` of them after `startingAfter`;
 * undefined when `startingAfter` names no import of the account.
 * note: the cursor's place is compared in SQL, not sent back as a Date: created_at holds
 * microseconds a Date would drop, and imports made within the same millisecond would be skipped.
 */
export async function listImports(sql: Sql, accountId: string, page: { limit: number; startingAfter?: string }): Promise<Page<ImportView> | undefined> {
  const before = page.startingAfter === undefined ? undefined : placeOf(sql, accountId, page.startingAfter);
  // note: one more than asked says whether there is more.
  const rows = await sql<ImportView[]>`
    select * from ${imports(sql, accountId, { rows: page.limit + 1, before })}
    order by "createdAt" desc, id desc
    limit ${page.limit + 1}`;
  // note: a page with imports shows that the cursor was one of the account's when it was read; an
  // empty one may come from a cursor that is none (or no longer one: purged meanwhile), which is
  // then told as such.
  if (rows.length === 0 && page.startingAfter !== undefined && !(await findImport(sql, accountId, page.startingAfter))) return undefined;
  return { data: rows.slice(0, page.limit), hasMore: rows.length > page.limit };
}

/**
 * The largest row index there can be (the `index` columns are PostgreSQL integers). note: a
 * `starting_after` beyond it reads as it, an empty page, rather than a parameter out of range.
 */
const MAX_ROW_INDEX = 2_147_483_647;

/**
 * An import's failed rows in index order, `limit` of them after the index `startingAfter`;
 * undefined when the account has no such import. A request import keeps them in its record's
 * `errors`; a file import, up to a million of them, in `import_file_errors`, read here a page at a
 * time along its primary key (job_id, index), never the whole list.
 * note: one statement either way; only the branch of the import's source is evaluated.
 */
export async function listImportErrors(
  sql: Sql,
  accountId: string,
  importId: string,
  page: { limit: number; startingAfter?: number },
): Promise<Page<RowError> | undefined> {
  const after = Math.min(page.startingAfter ?? -1, MAX_ROW_INDEX);
  const [found] = await sql<{ errors: RowError[] }[]>`
    select case when i.source = 'file' then (
      select coalesce(jsonb_agg(f.error order by f.index), '[]')
      from (
        select index, error from import_file_errors
        where job_id = ${importId} and index > ${after}
        order by index
        limit ${page.limit + 1}
      ) as f
    ) else (
      select coalesce(jsonb_agg(entry order by (entry->>'index')::int), '[]')
      from (
        select entry from jsonb_array_elements(i.errors) as entry
        where (entry->>'index')::int > ${after}
        order by (entry->>'index')::int
        limit ${page.limit + 1}
      ) as page
    ) end as errors
    from (
      select source, errors, 1 as preferred from imports where job_id = ${importId} and account_id = ${accountId} and state <> 'uploading'
      union all
      select 'request', errors, 2 from unsettled_imports where job_id = ${importId} and account_id = ${accountId}
    ) as i
    order by preferred
    limit 1`;
  if (!found) return undefined;
  return { data: found.errors.slice(0, page.limit), hasMore: found.errors.length > page.limit };
}
