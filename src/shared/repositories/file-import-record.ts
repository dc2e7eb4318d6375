import type { Sql } from '../infra/db.js';
import type { ImportKind } from '../import/import-kinds.js';
import type { ImportState } from './import-lookups.js';

/** What a file import's job needs to know of its import: its kind, its state, how far it is. */
export interface FileImportRecord {
  kind: ImportKind;
  state: ImportState;
  /** rows done so far, failed rows included, as `GET /v1/api/imports/{id}` counts `rows.processed` */
  processed: number;
  received: number;
}

/**
 * A file import's record, as last committed. note: a plain read, never blocked by the record lock
 * a chunk holds; the lock alone decides who writes (writeFileChunk), so this only reports.
 */
export async function findFileImportRecord(sql: Sql, importId: string): Promise<FileImportRecord | undefined> {
  const [record] = await sql<FileImportRecord[]>`
    select kind, state, coalesce(processed, skipped)::int as processed, coalesce(received, 0)::int as received
    from imports where job_id = ${importId} and source = 'file'`;
  return record;
}
