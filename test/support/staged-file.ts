import type { Sql, TransactionSql } from '../../src/shared/infra/db.js';
import { stageFileRows, type ChunkEncoding, type StagedRow } from '../../src/shared/repositories/import-files.js';

/** How an upload of listings stages them (every import but a merge). */
export const LISTINGS_AS_COPY: ChunkEncoding = { format: 'copy', kind: 'listings' };

/**
 * Stages a file's valid rows as the upload does: a chunk of `chunkRows` at a time, in file order
 * (each chunk is what a worker writes in one transaction), as `COPY` text unless told otherwise.
 * Returns the positions refused because an earlier row of the file carries their external_id.
 */
export async function stageInChunks(
  tx: TransactionSql,
  importId: string,
  rows: readonly StagedRow[],
  chunkRows: number,
  encoding: ChunkEncoding = LISTINGS_AS_COPY,
): Promise<number[]> {
  const repeats: number[] = [];
  for (let start = 0; start < rows.length; start += chunkRows) repeats.push(...(await stageFileRows(tx, importId, rows.slice(start, start + chunkRows), encoding)));
  return repeats;
}

/** How many rows of an import are still staged. */
export async function stagedRowsLeft(sql: Sql, importId: string): Promise<number> {
  const [left] = await sql<{ n: number }[]>`select coalesce(sum(rows), 0)::int as n from import_file_chunks where job_id = ${importId}`;
  return left!.n;
}
