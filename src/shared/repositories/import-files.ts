import postgres from 'postgres';
import type { Sql, TransactionSql } from '../infra/db.js';
import type { ListingRow } from '../rows/listing-row.js';
import type { MachineRow } from '../rows/machine-row.js';
import type { RowError } from '../rows/row-errors.js';

/**
 * The statements of a whole-file import's staging (migration 0009): its valid rows wait in
 * `import_file_rows` until a chunk writes them; its failed rows are kept in `import_file_errors`.
 * note: statements only; the upload's transaction and the chunk's are their callers'.
 */

/** A valid row of a file, normalised, at its position in the file. */
export interface StagedRow {
  index: number;
  row: ListingRow | MachineRow;
}

/**
 * Stages valid rows of a file; returns the positions of those refused because an earlier row of
 * the same file carries their `external_id` (in this call or an earlier one). note: the rows go
 * in position order, and `on conflict do nothing` keeps the first of two with one id, within one
 * statement as across statements (import_file_rows_external_id_key).
 */
export async function stageFileRows(tx: TransactionSql, jobId: string, rows: readonly StagedRow[]): Promise<number[]> {
  if (rows.length === 0) return [];
  const staged = await tx<{ index: number }[]>`
    insert into import_file_rows (job_id, index, external_id, row)
    select ${jobId}, r.index, r.row->>'external_id', r.row
    from jsonb_to_recordset(${JSON.stringify(rows)}::text::jsonb) as r(index integer, row jsonb)
    order by r.index
    on conflict (job_id, external_id) where external_id is not null do nothing
    returning index`;
  const kept = new Set(staged.map((row) => row.index));
  return rows.filter((row) => !kept.has(row.index)).map((row) => row.index);
}

/** Keeps failed rows of a file, by position (each once: a position already kept stays as it is). */
export async function recordFileRowErrors(tx: TransactionSql, jobId: string, errors: readonly RowError[]): Promise<void> {
  if (errors.length === 0) return;
  await tx`
    insert into import_file_errors (job_id, index, error)
    select ${jobId}, (e->>'index')::int, e from jsonb_array_elements(${JSON.stringify(errors)}::text::jsonb) as e
    on conflict (job_id, index) do nothing`;
}

/** A chunk taken from the staging: its rows as one JSON array, as the insert reads them (writeRows). */
export interface FileChunk {
  rows: string;
  count: number;
}

/**
 * Takes the next `limit` staged rows of an import, in position order, out of the staging: deleted
 * here, so that they are written by the transaction that took them or, when it rolls back, stay
 * for the next one. note: the caller holds the import's record locked, so two chunks of one
 * import never run at once.
 */
export async function takeFileChunk(tx: TransactionSql, jobId: string, limit: number): Promise<FileChunk> {
  const [chunk] = await tx<FileChunk[]>`
    with taken as (
      delete from import_file_rows
      where job_id = ${jobId} and index = any(array(
        select index from import_file_rows where job_id = ${jobId} order by index limit ${limit}
      ))
      returning index, row
    )
    select coalesce(json_agg(row order by index), '[]')::text as rows, count(*)::int as count from taken`;
  return chunk!;
}

/** Deletes what is left staged of an import (it ended, was cancelled or failed); returns how many rows. */
export async function dropStagedRows(tx: TransactionSql, jobId: string): Promise<number> {
  const dropped = await tx`delete from import_file_rows where job_id = ${jobId}`;
  return dropped.count;
}

/** Up to `limit` file imports still queued or running, oldest first (imports_file_unfinished_idx). */
export async function unfinishedFileImports(sql: Sql, limit: number): Promise<string[]> {
  const rows = await sql<{ job_id: string }[]>`
    select job_id from imports
    where source = 'file' and state in ('queued', 'running')
    order by created_at
    limit ${limit}`;
  return rows.map((row) => row.job_id);
}

/** What cancelFileImport did. */
export type FileImportCancel =
  /** it was queued or running: it is cancelled now, and nothing of it is staged any more */
  | 'cancelled'
  /** nothing: it had ended, it is a request's import, or it is none of the account's */
  | 'unchanged'
  /** nothing: a chunk held its record for longer than the wait allows */
  | 'locked';

/**
 * How long a cancel waits for the chunk that holds the import's record. note: a chunk takes tens
 * of milliseconds; a longer hold is a worker frozen inside its transaction, and the caller is
 * better told to try again than held.
 */
const CANCEL_LOCK_TIMEOUT_MS = 5_000;

const PG_LOCK_NOT_AVAILABLE = '55P03';

/**
 * Cancels a file import of the account that is queued or running, and drops what it has staged,
 * in one transaction. note: the update takes the record's row lock, which every chunk holds
 * (writeFileChunk), so it waits for a chunk under way, which then counts; PostgreSQL re-reads the
 * record the chunk committed, so an import that chunk completed stays completed. Once cancelled,
 * every later chunk finds it ended and writes nothing: no chunk starts after this returns.
 */
export async function cancelFileImport(
  sql: Sql,
  accountId: string,
  importId: string,
  { lockTimeoutMs = CANCEL_LOCK_TIMEOUT_MS }: { lockTimeoutMs?: number } = {},
): Promise<FileImportCancel> {
  try {
    return await sql.begin(async (tx): Promise<FileImportCancel> => {
      await tx`select set_config('lock_timeout', ${`${lockTimeoutMs}ms`}, true)`;
      const cancelled = await tx`
        update imports set state = 'cancelled', finished_at = clock_timestamp()
        where job_id = ${importId} and account_id = ${accountId} and source = 'file' and state in ('queued', 'running')
        returning job_id`;
      if (cancelled.count === 0) return 'unchanged';
      await dropStagedRows(tx, importId);
      return 'cancelled';
    });
  } catch (error) {
    if (error instanceof postgres.PostgresError && error.code === PG_LOCK_NOT_AVAILABLE) return 'locked';
    throw error;
  }
}
