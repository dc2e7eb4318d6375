import type { Sql, TransactionSql } from '../infra/db.js';
import type { ImportKind } from '../import/import-kinds.js';
import type { EntryForm, RowRemovalAction } from '../import/row-removal-job.js';
import type { RowError } from '../rows/row-errors.js';
import { createdAtOf, type ImportOfRequest } from './import-records.js';

/**
 * The statements of an import that archives or deletes the rows its request names
 * (docs/catalogue.md#archive-and-delete). note: statements only; the transaction around them, the
 * dry run's rollback and what a failure means for the job are the worker's
 * (src/worker/write-row-removal.ts).
 */

/** The rows a request names, by the form of its entries. */
export interface NamedRows {
  kind: ImportKind;
  accountId: string;
  by: EntryForm;
  /** `external_id`s as stored (trimmed), or ids in lower case */
  keys: readonly string[];
}

/** The column an entry names its row by, and its key as text (a uuid reads in lower case). */
function keyOf(sql: Sql | TransactionSql, { by, keys }: NamedRows) {
  return by === 'id'
    ? { column: sql`t.id::text`, matches: sql`t.id = any(${sql.array(keys as string[])}::uuid[])` }
    : { column: sql`t.external_id`, matches: sql`t.external_id = any(${sql.array(keys as string[])}::text[])` };
}

/**
 * Which of `keys` name a row of the account, archived or not: one read along the account's
 * external_id index or the primary key. note: the API's look before it queues the import, so that
 * a request naming no row is answered 400 at once; the worker looks again in its transaction.
 */
export async function findNamedRows(sql: Sql, named: NamedRows): Promise<Set<string>> {
  const { column, matches } = keyOf(sql, named);
  const rows = await sql<{ key: string }[]>`
    select ${column} as key from ${sql(named.kind)} as t where t.account_id = ${named.accountId} and ${matches}`;
  return new Set(rows.map((row) => row.key));
}

/** A named row, locked for the rest of the transaction. */
export interface LockedRow {
  id: string;
  key: string;
  externalId: string | null;
  archived: boolean;
}

/**
 * Locks the account's rows that `keys` name, until the transaction ends, and reads them as they
 * are then. note: in (external_id, id) order, the order in which an upsert of the same rows takes
 * them (repositories/imports.ts rowsInsert takes its rows in external_id order; rows without one
 * no upsert touches): an upsert and an archive of the same rows wait for each other, one after
 * the other, instead of deadlocking. A row an earlier transaction deleted meanwhile is not found;
 * one it changed is read as it committed.
 */
export async function lockNamedRows(tx: TransactionSql, named: NamedRows): Promise<LockedRow[]> {
  const { column, matches } = keyOf(tx, named);
  return tx<LockedRow[]>`
    select t.id::text as id, ${column} as key, t.external_id as "externalId", t.archived_at is not null as archived
    from ${tx(named.kind)} as t
    where t.account_id = ${named.accountId} and ${matches}
    order by t.external_id, t.id
    for update`;
}

/** The rows an archive or delete changed, as its statement returned them (only when asked: `?return=rows`). */
export interface RemovedRows {
  count: number;
  /** id and external_id of each row changed, when asked; else empty */
  rows: { id: string; externalId: string | null }[];
}

const noneRemoved: RemovedRows = { count: 0, rows: [] };

/** Archives the rows (locked, active) of `ids`: they leave the active set and keep every field. */
export async function archiveRows(tx: TransactionSql, kind: ImportKind, ids: readonly string[], { returning = false } = {}): Promise<RemovedRows> {
  if (ids.length === 0) return noneRemoved;
  const archived = await tx<{ id: string; externalId: string | null }[]>`
    update ${tx(kind)} set archived_at = now(), updated_at = now()
    where id = any(${tx.array(ids as string[])}::uuid[]) and archived_at is null
    ${returning ? tx`returning id::text as id, external_id as "externalId"` : tx``}`;
  return { count: archived.count, rows: returning ? [...archived] : [] };
}

/** Deletes the rows (locked) of `ids` for good: their external_ids are free again. */
export async function deleteRows(tx: TransactionSql, kind: ImportKind, ids: readonly string[], { returning = false } = {}): Promise<RemovedRows> {
  if (ids.length === 0) return noneRemoved;
  const deleted = await tx<{ id: string; externalId: string | null }[]>`
    delete from ${tx(kind)} where id = any(${tx.array(ids as string[])}::uuid[])
    ${returning ? tx`returning id::text as id, external_id as "externalId"` : tx``}`;
  return { count: deleted.count, rows: returning ? [...deleted] : [] };
}

/**
 * Records the import of `importId` (completed, its counts written by completeRowRemovalRecord in the
 * same transaction) unless it is recorded already; true when this call recorded it.
 * note: exactly once rests on the primary key, as for every import: a run of the same job whose
 * transaction holds the record makes this insert wait until it ends, then find the record (it
 * committed) or take its place (it rolled back). So is the API's fence (recordImportNotWritten):
 * once it recorded the import failed, no run writes it.
 */
export async function claimRowRemovalRecord(tx: TransactionSql, input: ImportOfRequest & { action: RowRemovalAction }): Promise<boolean> {
  const [recorded] = await tx`
    insert into imports (job_id, account_id, kind, action, request_id, received, inserted, skipped, errors, state, created_at, started_at)
    values (${input.importId}, ${input.accountId}, ${input.kind}, ${input.action}, ${input.requestId}, ${input.total},
            0, 0, '[]', 'completed', ${createdAtOf(input)}, now())
    on conflict (job_id) do nothing
    returning job_id`;
  return recorded !== undefined;
}

/** What an archive or a delete did, as its record keeps it. */
export interface RowRemovalCounts {
  /** rows archived (archive) or deleted (delete) */
  removed: number;
  /** rows already archived (archive only) */
  unchanged: number;
  errors: RowError[];
}

/** Writes the counts and the failed entries of the import claimRowRemovalRecord recorded, and its end. */
export async function completeRowRemovalRecord(tx: TransactionSql, importId: string, action: RowRemovalAction, counts: RowRemovalCounts): Promise<void> {
  const { removed, unchanged, errors } = counts;
  await tx`
    update imports set
      archived = ${action === 'archive' ? removed : null},
      deleted = ${action === 'delete' ? removed : null},
      unchanged = ${action === 'archive' ? unchanged : null},
      skipped = ${errors.length},
      errors = ${tx.json(errors)},
      finished_at = clock_timestamp()
    where job_id = ${importId}`;
}
