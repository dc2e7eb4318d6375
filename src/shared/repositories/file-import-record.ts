import type { Sql, TransactionSql } from '../infra/db.js';
import type { ImportKind } from '../import/import-kinds.js';
import type { ImportState } from './import-lookups.js';
import type { RowsWritten } from './imports.js';
import type { MirrorRemoval } from './mirror-removal.js';

/**
 * The statements of a file import's record as its job writes it: read it, add a chunk's counts,
 * record it completed. note: statements only; the chunk's transaction and its locks are the
 * worker's (src/worker/write-file-chunk.ts).
 */

/** What a file import's job needs to know of its import: whose it is, its kind, its state, how far it is. */
export interface FileImportRecord {
  accountId: string;
  kind: ImportKind;
  /** `uploading` while its upload is still being received (migration 0013): no job writes it yet */
  state: ImportState | 'uploading';
  /** rows done so far, failed rows included, as `GET /v1/api/imports/{id}` counts `rows.processed` */
  processed: number;
  received: number;
  /** its rows merge into the rows they name (docs/catalogue.md#merge) */
  merge: boolean;
  /** when its upload began (its request arrived), never moved by later steps: a mirror's cut-off (decisions K.6) */
  uploadBeganAt: Date;
  /**
   * a mirror's removal (docs/catalogue.md#mirror), with its guard's base (the catalogue its file
   * replaces, null for an import recorded before it was kept); undefined for every other import
   */
  removal: (MirrorRemoval & { state: 'pending' | 'done' | 'held' | 'skipped'; base: number | null }) | undefined;
}

/**
 * A file import's record, as last committed (or as the caller's transaction sees it); undefined
 * when there is none, or when the import is a request's. note: a plain read, never blocked by the
 * record lock a chunk holds; the lock alone decides who writes (writeFileChunk), so this only reports.
 */
export async function findFileImportRecord(sql: Sql | TransactionSql, importId: string): Promise<FileImportRecord | undefined> {
  const [record] = await sql<(Omit<FileImportRecord, 'removal'> & RemovalColumns)[]>`
    select account_id as "accountId", kind, state, coalesce(processed, skipped)::int as processed, coalesce(received, 0)::int as received, merge,
           coalesce(upload_began_at, created_at) as "uploadBeganAt",
           removal_missing as missing, removal_max_percent as "maxPercent", removal_state as "removalState", removal_base as base
    from imports where job_id = ${importId} and source = 'file'`;
  if (!record) return undefined;
  const { missing, maxPercent, removalState, base, ...rest } = record;
  return { ...rest, removal: removalState === null ? undefined : { missing: missing!, maxPercent: maxPercent!, state: removalState, base } };
}

/**
 * Adds what a chunk wrote to the import's counts, and marks it running (started now, unless it
 * had started): `failed` of its rows could not be written (a merge row that names no row and is
 * not whole), and count as skipped. note: it takes the record's row lock, held until the chunk's
 * transaction ends.
 */
export async function recordChunkWritten(tx: TransactionSql, importId: string, written: RowsWritten & { failed?: number }): Promise<void> {
  const failed = written.failed ?? 0;
  const unchanged = written.sent - written.inserted - written.updated - failed;
  await tx`
    update imports set
      state = 'running',
      started_at = coalesce(started_at, now()),
      inserted = inserted + ${written.inserted},
      updated = coalesce(updated, 0) + ${written.updated},
      unchanged = coalesce(unchanged, 0) + ${unchanged},
      skipped = skipped + ${failed},
      processed = coalesce(processed, skipped) + ${written.sent}
    where job_id = ${importId}`;
}

interface RemovalColumns {
  base: number | null;
  missing: MirrorRemoval['missing'] | null;
  maxPercent: number | null;
  removalState: NonNullable<FileImportRecord['removal']>['state'] | null;
}

/** Records the import completed, finished now (started now too, when no chunk of it ever ran). */
export async function recordFileImportCompleted(tx: TransactionSql, importId: string): Promise<void> {
  await tx`
    update imports set state = 'completed', started_at = coalesce(started_at, now()), finished_at = clock_timestamp()
    where job_id = ${importId}`;
}
