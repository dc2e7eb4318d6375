import type { Sql, TransactionSql } from '../shared/infra/db.js';
import type { ImportKind } from '../shared/import/import-kinds.js';
import { findFileImportRecord, recordChunkWritten, recordFileImportCompleted } from '../shared/repositories/file-import-record.js';
import {
  copyChunkIn,
  copyNewChunkRows,
  dropStagedRows,
  hasStagedChunks,
  holdFileImportWriting,
  recordFileRowErrors,
  shareFileImportWriting,
  takeNextFileChunk,
  type FileChunk,
} from '../shared/repositories/import-files.js';
import { findImportingAccount, writeRows, type ImportingAccount, type RowsWritten } from '../shared/repositories/imports.js';
import { mergeChunkRows, mergeFailureError } from '../shared/repositories/merge-rows.js';
import { recordRemoval, removeRowsLeftOut } from '../shared/repositories/mirror-removal.js';
import { refuseMergeRace } from './write-errors.js';

/** What one call of writeFileChunk did. */
export type ChunkOutcome =
  /** a chunk was written (`rows` of it, `changed` of them created or updated); more may follow */
  | { state: 'written'; kind: ImportKind; rows: number; changed: number }
  /** nothing was left: the import is recorded completed */
  | { state: 'completed' }
  /** the import had ended (cancelled, failed, completed) or is gone: nothing was written */
  | { state: 'ended' }
  /** the import is being completed or cancelled, or its last chunks are still being written elsewhere: nothing was written */
  | { state: 'busy' };

type Hooks = { beforeCommit?: () => Promise<void> };

const isUnfinished = (state: string) => state === 'queued' || state === 'running';

/**
 * Writes the next chunk of a file import, exactly once: in one transaction it takes the import's
 * write lock shared, takes the next staged chunk no other transaction holds (a batch of the file's
 * rows, as the upload staged it: FILE_CHUNK_ROWS at most), writes its rows (matched on
 * `external_id`, as a bulk request's rows are, when any carries one; else copied straight in) and
 * deletes the chunk, and adds what they did to the record's counts. A worker that dies mid-chunk
 * rolls all of it back: the chunk is still staged, and the next call (by any worker) writes it.
 * An import that is no longer queued or running (cancelled) gets nothing more, and what it staged
 * is dropped. When no chunk is left to take, it completes the import (completeFileImport).
 *
 * note: chunks of one import run side by side, each in its own transaction on its own connection
 * (`for update skip locked` hands each a different chunk): a file is written by as many
 * connections as its job gives it. The shared lock keeps a cancel or a completion waiting until
 * the chunks under way commit. `hooks.beforeCommit` lets tests stop a chunk inside its transaction.
 */
export async function writeFileChunk(sql: Sql, importId: string, hooks: Hooks = {}): Promise<ChunkOutcome> {
  const outcome = await sql.begin(async (tx): Promise<ChunkOutcome | { state: 'nothing to take' }> => {
    if (!(await shareFileImportWriting(tx, importId))) return { state: 'busy' };
    const record = await findFileImportRecord(tx, importId);
    // note: an upload not accepted yet has no job; its staging is its API process's to drop.
    if (!record || record.state === 'uploading') return { state: 'ended' };
    if (!isUnfinished(record.state)) {
      // note: a cancel drops the staging itself; this is for an import ended any other way.
      await dropStagedRows(tx, importId);
      return { state: 'ended' };
    }
    const account = await findImportingAccount(tx, record.accountId);
    if (!account) return { state: 'ended' };
    const chunk = await takeNextFileChunk(tx, importId);
    if (!chunk) return { state: 'nothing to take' };
    const written = record.merge
      ? await mergeChunk(tx, { kind: record.kind, importId, accountId: record.accountId, firstIndex: chunk.firstIndex })
      : await writeChunkRows(tx, { kind: record.kind, importId, accountId: record.accountId, account }, chunk);
    // note: the record's row lock is taken here, at the end: chunks side by side wait for each
    // other only between this update and their commit.
    await recordChunkWritten(tx, importId, written);
    await hooks.beforeCommit?.();
    return { state: 'written', kind: record.kind, rows: written.sent, changed: written.inserted + written.updated };
  });
  if (outcome.state !== 'nothing to take') return outcome;
  return sql.begin((tx) => completeFileImport(tx, importId, hooks));
}

/**
 * Writes a chunk's rows: straight into their table with `COPY` when they can only be new (staged as
 * `COPY` text, none with an external_id: copyNewChunkRows), else by one statement (writeRows) from
 * the table of copied rows or from the staged JSON.
 */
async function writeChunkRows(
  tx: TransactionSql,
  by: { kind: ImportKind; importId: string; accountId: string; account: ImportingAccount },
  chunk: FileChunk,
): Promise<RowsWritten> {
  const { kind, importId } = by;
  const { firstIndex } = chunk;
  if (chunk.format === 'copy' && !chunk.withExternalIds) return copyNewChunkRows(tx, { ...by, firstIndex });
  const rows = chunk.format === 'copy' ? await copyChunkIn(tx, kind, importId, firstIndex) : { firstIndex };
  return writeRows(tx, { ...by, rows, matchExternalIds: chunk.withExternalIds });
}

/**
 * Merges a chunk of a merge file import (docs/catalogue.md#merge), and keeps the errors of its
 * rows that could neither merge nor be created with the file's other failed rows. A whole row
 * whose id another import created meanwhile rolls the chunk back (MergeRaceError): it stays
 * staged, and the next attempt merges it.
 */
async function mergeChunk(tx: TransactionSql, chunk: Parameters<typeof mergeChunkRows>[1]): Promise<RowsWritten & { failed: number }> {
  const merged = await mergeChunkRows(tx, chunk);
  refuseMergeRace(chunk.importId, merged.raced);
  await recordFileRowErrors(tx, chunk.importId, merged.failed.map(mergeFailureError));
  return { sent: merged.sent, inserted: merged.inserted, updated: merged.updated, failed: merged.failed.length };
}

/**
 * Records a file import completed once nothing of it is staged, and drops the ids its rows
 * claimed; a mirror's removal happens here first, in the same transaction, so exactly once with
 * the completion (a worker that dies on the way rolls both back, and the next attempt does both). note: it holds the write lock exclusively, so it waits for the chunks under way and
 * then sees what they left: a chunk another transaction still held (or rolled back) is `busy`,
 * to be written by whoever takes it next.
 */
async function completeFileImport(tx: TransactionSql, importId: string, hooks: Hooks): Promise<ChunkOutcome> {
  await holdFileImportWriting(tx, importId);
  const record = await findFileImportRecord(tx, importId);
  if (!record || !isUnfinished(record.state)) return { state: 'ended' };
  if (await hasStagedChunks(tx, importId)) return { state: 'busy' };
  // note: a mirror's removal reads what the file claimed, so it comes before the staging is dropped
  if (record.removal?.state === 'pending') {
    const { missing, maxPercent, base } = record.removal;
    const outcome = await removeRowsLeftOut(tx, { importId, accountId: record.accountId, kind: record.kind, removal: { missing, maxPercent }, since: record.uploadBeganAt, base });
    await recordRemoval(tx, importId, missing, outcome);
  }
  await recordFileImportCompleted(tx, importId);
  await dropStagedRows(tx, importId);
  await hooks.beforeCommit?.();
  return { state: 'completed' };
}
