import postgres from 'postgres';
import type { Sql, TransactionSql } from '../infra/db.js';
import { copyRowsIn, type CopiedRows, type ImportingAccount, type RowsWritten } from './imports.js';
import { copyLineCount, sendNewRows, startNewRowsCopy } from './copy-new-rows.js';
import type { ListingRow } from '../rows/listing-row.js';
import type { MachineRow } from '../rows/machine-row.js';
import type { RowError } from '../rows/row-errors.js';
import type { ImportKind } from '../import/import-kinds.js';
import { encodeCopyRows } from '../import/copy-rows.js';

/**
 * The statements of a whole-file import's staging (migrations 0009, 0010): its valid rows wait in
 * `import_file_chunks`, a batch of rows to a chunk, until a worker's chunk writes them; the ids its
 * rows carry are claimed in `import_file_external_ids`; its failed rows are kept in
 * `import_file_errors`. note: statements only; the upload's transaction and the chunk's are their
 * callers'.
 */

/** A valid row of a file, normalised, at its position in the file. */
export interface StagedRow {
  index: number;
  /** the row's own id, trimmed, or null */
  externalId: string | null;
  row: ListingRow | MachineRow;
}

export function stagedRow(index: number, row: ListingRow | MachineRow): StagedRow {
  return { index, externalId: typeof row.external_id === 'string' ? row.external_id : null, row };
}

/**
 * About the characters a normalised row holds (its texts, and a few for each value), reckoned
 * without writing it out. note: what bounds a batch's memory; writing each row as JSON to measure
 * it cost an upload of a million rows over a second (a chunk is written out once, whole).
 */
export function stagedRowSize(row: ListingRow | MachineRow): number {
  let size = 2;
  for (const value of Object.values(row)) {
    size += 16;
    if (typeof value === 'string') size += value.length;
    else if (Array.isArray(value)) for (const entry of value as unknown[]) size += 4 + (typeof entry === 'string' ? entry.length : 8);
  }
  return size;
}

const hasExternalId = (staged: StagedRow): boolean => staged.externalId !== null;

/**
 * How a file's chunks are staged: as the text `COPY` reads, of the file's kind (migration 0020),
 * or as JSON (a merge's rows, which list the fields they change).
 */
export type ChunkEncoding = { format: 'copy'; kind: ImportKind } | { format: 'json' };

function encodeChunk(rows: readonly StagedRow[], encoding: ChunkEncoding): string {
  const normalised = rows.map((staged) => staged.row);
  return encoding.format === 'copy' ? encodeCopyRows(encoding.kind, normalised) : JSON.stringify(normalised);
}

/**
 * Rows a chunk holds at most: what a worker writes in one transaction. note: a thousand rows make
 * a chunk of tens of milliseconds, which a cancel waits for and which leaves the database to bulk
 * requests between two chunks; chunks of 5,000 and 10,000 rows wrote no faster.
 */
export const FILE_CHUNK_ROWS = 1_000;

/**
 * Stages a batch of valid rows of a file, in position order, as chunks of FILE_CHUNK_ROWS: the
 * rows a worker writes in one transaction each. Returns the positions refused because an earlier
 * row of the file carries their `external_id` (in this batch or an earlier one); those are not
 * staged.
 *
 * note: ids are claimed in position order, and `on conflict do nothing` keeps the first claim of
 * an id, within one statement as across statements, so the first row of the file with an id keeps
 * it. A batch without ids costs one insert, whatever its chunks.
 */
export async function stageFileRows(tx: TransactionSql, importId: string, rows: readonly StagedRow[], encoding: ChunkEncoding): Promise<number[]> {
  const withIds = rows.filter(hasExternalId);
  let repeats: number[] = [];
  if (withIds.length > 0) {
    const claims = withIds.map((staged) => ({ index: staged.index, external_id: staged.externalId }));
    const claimed = await tx<{ index: number }[]>`
      insert into import_file_external_ids (job_id, external_id, index)
      select ${importId}, c.external_id, c.index
      from jsonb_to_recordset(${JSON.stringify(claims)}::text::jsonb) as c(index integer, external_id text)
      order by c.index
      on conflict (job_id, external_id) do nothing
      returning index`;
    const kept = new Set(claimed.map((claim) => claim.index));
    repeats = withIds.filter((staged) => !kept.has(staged.index)).map((staged) => staged.index);
  }
  const refused = new Set(repeats);
  const staged = refused.size === 0 ? rows : rows.filter((staged) => !refused.has(staged.index));
  const chunks = [];
  for (let start = 0; start < staged.length; start += FILE_CHUNK_ROWS) {
    const chunk = staged.slice(start, start + FILE_CHUNK_ROWS);
    chunks.push({
      job_id: importId,
      first_index: chunk[0]!.index,
      rows: chunk.length,
      body: encodeChunk(chunk, encoding),
      with_external_ids: chunk.some(hasExternalId),
      format: encoding.format,
    });
  }
  if (chunks.length > 0) await tx`insert into import_file_chunks ${tx(chunks, 'job_id', 'first_index', 'rows', 'body', 'with_external_ids', 'format')}`;
  return repeats;
}

/** Keeps failed rows of a file, by position (each once: a position already kept stays as it is). */
export async function recordFileRowErrors(tx: TransactionSql, importId: string, errors: readonly RowError[]): Promise<void> {
  if (errors.length === 0) return;
  await tx`
    insert into import_file_errors (job_id, index, error)
    select ${importId}, (e->>'index')::int, e from jsonb_array_elements(${JSON.stringify(errors)}::text::jsonb) as e
    on conflict (job_id, index) do nothing`;
}

/** A staged chunk of a file import, without its rows. */
export interface FileChunk {
  /** the file position of its first row: what names it (writeRows reads and deletes it by it) */
  firstIndex: number;
  count: number;
  /** whether a row of it carries an external_id: only then must the insert match rows by id */
  withExternalIds: boolean;
  /** how its rows are staged (ChunkEncoding) */
  format: 'json' | 'copy';
}

/**
 * The advisory lock of a file import's writing: each chunk holds it shared, so chunks of one
 * import run side by side; completing and cancelling hold it exclusively, so they wait for the
 * chunks under way and no chunk starts meanwhile. note: transaction-scoped (it goes with the
 * commit, and works through PgBouncer's transaction pooling); the class keeps it apart from the
 * other advisory locks, and two imports whose ids hash alike only wait for each other.
 */
const FILE_WRITE_LOCK_CLASS = 727_411_010;

/** Takes the import's write lock shared, unless its completion or cancel holds it: whether it was taken. */
export async function shareFileImportWriting(tx: TransactionSql, importId: string): Promise<boolean> {
  const [lock] = await tx<{ taken: boolean }[]>`select pg_try_advisory_xact_lock_shared(${FILE_WRITE_LOCK_CLASS}, hashtext(${importId})) as taken`;
  return lock!.taken;
}

/** Takes the import's write lock exclusively, waiting for the chunks under way (bounded by the transaction's lock_timeout). */
export async function holdFileImportWriting(tx: TransactionSql, importId: string): Promise<void> {
  await tx`select pg_advisory_xact_lock(${FILE_WRITE_LOCK_CLASS}, hashtext(${importId}))`;
}

/**
 * The next staged chunk of an import no other transaction has taken, in file order, locked for
 * this transaction; undefined when none is left to take. note: the statement that writes its rows
 * deletes it (writeRows), so that they are written by the transaction that took them or, when it
 * rolls back, stay for the next one; `skip locked` lets chunks of one import be written side by
 * side, each by its own transaction.
 */
export async function takeNextFileChunk(tx: TransactionSql, importId: string): Promise<FileChunk | undefined> {
  const [chunk] = await tx<FileChunk[]>`
    select first_index as "firstIndex", rows as count, with_external_ids as "withExternalIds", format
    from import_file_chunks where job_id = ${importId} order by first_index limit 1 for update skip locked`;
  return chunk;
}

/**
 * Takes a chunk staged as `COPY` text out of the staging and sends its rows with `COPY` into the
 * transaction's table of copied rows (copyRowsIn), for writeRows to read; deleted in the
 * transaction that writes them, as writeRows deletes a JSON chunk.
 */
export async function copyChunkIn(tx: TransactionSql, kind: ImportKind, importId: string, firstIndex: number): Promise<CopiedRows> {
  const [taken] = await tx<{ body: string }[]>`delete from import_file_chunks where job_id = ${importId} and first_index = ${firstIndex} returning body`;
  await copyRowsIn(tx, kind, Buffer.from(taken!.body, 'utf8'));
  return { copiedKind: kind };
}

/**
 * Takes a chunk staged as `COPY` text whose rows carry no external_id out of the staging and
 * copies its rows straight into their table, each with the import's own columns (copy-new-rows.ts):
 * rows that can only be new need no table of copied rows and no statement to insert them. The
 * chunk's delete and the `COPY`'s start go in one round trip.
 */
export async function copyNewChunkRows(
  tx: TransactionSql,
  chunk: { kind: ImportKind; importId: string; accountId: string; account: ImportingAccount; firstIndex: number },
): Promise<RowsWritten> {
  const taking = tx<{ body: string }[]>`delete from import_file_chunks where job_id = ${chunk.importId} and first_index = ${chunk.firstIndex} returning body`.execute();
  const writable = await startNewRowsCopy(tx, chunk.kind);
  const [taken] = await taking;
  const rows = Buffer.from(taken!.body, 'utf8');
  await sendNewRows(writable, chunk, rows);
  const sent = copyLineCount(rows);
  return { sent, inserted: sent, updated: 0 };
}

/** Whether anything of the import is still staged. */
export async function hasStagedChunks(tx: TransactionSql, importId: string): Promise<boolean> {
  const [left] = await tx`select 1 from import_file_chunks where job_id = ${importId} limit 1`;
  return left !== undefined;
}

/** Deletes what is left staged of an import (it ended, was cancelled or failed): its chunks and the ids its rows claimed. */
export async function dropStagedRows(tx: TransactionSql, importId: string): Promise<void> {
  await tx`delete from import_file_chunks where job_id = ${importId}`;
  await tx`delete from import_file_external_ids where job_id = ${importId}`;
  // note: a mirror's, the ids its failed lines carried (mirror-removal.ts)
  await tx`delete from import_file_seen_ids where job_id = ${importId}`;
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
  /** nothing: a chunk under way held the import for longer than the wait allows */
  | 'locked';

/**
 * How long a cancel waits for the chunks under way. note: a chunk takes tens of milliseconds; a
 * longer hold is a worker frozen inside its transaction, and the caller is better told to try
 * again than held.
 */
const CANCEL_LOCK_TIMEOUT_MS = 5_000;

const PG_LOCK_NOT_AVAILABLE = '55P03';

/**
 * Cancels a file import of the account that is queued or running, and drops what it has staged,
 * in one transaction. note: it holds the import's write lock exclusively, so it waits for the
 * chunks under way, which then count, and reads the state they and a completion left: an import
 * completed meanwhile stays completed. Once cancelled, every later chunk finds it ended and writes
 * nothing: no chunk starts after this returns. Another account's import is left without waiting
 * for its chunks.
 */
export async function cancelFileImport(
  sql: Sql,
  accountId: string,
  importId: string,
  { lockTimeoutMs = CANCEL_LOCK_TIMEOUT_MS }: { lockTimeoutMs?: number } = {},
): Promise<FileImportCancel> {
  try {
    return await sql.begin(async (tx): Promise<FileImportCancel> => {
      const [own] = await tx`select 1 from imports where job_id = ${importId} and account_id = ${accountId} and source = 'file'`;
      if (!own) return 'unchanged';
      await tx`select set_config('lock_timeout', ${`${lockTimeoutMs}ms`}, true)`;
      await holdFileImportWriting(tx, importId);
      const cancelled = await tx`
        update imports set state = 'cancelled', finished_at = clock_timestamp(),
          -- note: a cancelled mirror removes nothing (docs/catalogue.md#mirror)
          removal_state = case when removal_state is not null then 'skipped' end
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
