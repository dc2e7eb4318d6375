import type { Sql } from '../shared/infra/db.js';
import type { ImportKind } from '../shared/import/import-kinds.js';
import { dropStagedRows, nextFileChunk } from '../shared/repositories/import-files.js';
import { findImportingAccount, writeRows } from '../shared/repositories/imports.js';

/** What one call of writeFileChunk did. */
export type ChunkOutcome =
  /** a chunk was written (`rows` of it, `changed` of them created or updated); more may follow */
  | { state: 'written'; kind: ImportKind; rows: number; changed: number }
  /** nothing was left: the import is recorded completed */
  | { state: 'completed' }
  /** the import had ended (cancelled, failed, completed) or is gone: nothing was written */
  | { state: 'ended' }
  /** another worker is writing a chunk of it right now: nothing was written */
  | { state: 'busy' };

interface FileImportRecord {
  accountId: string;
  kind: ImportKind;
  state: string;
  source: string;
}

/**
 * Writes the next chunk of a file import, exactly once: in one transaction it locks the import's
 * record, takes the next staged chunk out of the staging (a batch of the file's rows, as the upload
 * staged it: FILE_CHUNK_ROWS at most), writes its rows (matched on `external_id`, as a bulk
 * request's rows are, when any carries one) and adds what they did to the record's counts.
 * A worker that dies mid-chunk rolls all of it back: the rows are still staged, and the next call
 * (by any worker) writes them. An import that is no longer queued or running (cancelled between
 * two chunks) is left as it is, and what it staged is dropped. The last call finds nothing left
 * and records the import completed.
 *
 * note: the record's lock makes the chunks of one import run one after another, whichever
 * workers run them; a worker that finds it locked is told `busy` at once rather than wait.
 * `hooks.beforeCommit` lets tests stop a chunk inside its transaction.
 */
export async function writeFileChunk(
  sql: Sql,
  jobId: string,
  hooks: { beforeCommit?: () => Promise<void> } = {},
): Promise<ChunkOutcome> {
  return sql.begin(async (tx): Promise<ChunkOutcome> => {
    const [locked] = await tx<FileImportRecord[]>`
      select account_id as "accountId", kind, state, source from imports where job_id = ${jobId} for update skip locked`;
    if (!locked) {
      const [exists] = await tx`select 1 from imports where job_id = ${jobId}`;
      return exists ? { state: 'busy' } : { state: 'ended' };
    }
    const record = locked;
    if (record.source !== 'file') return { state: 'ended' };
    if (record.state !== 'queued' && record.state !== 'running') {
      await dropStagedRows(tx, jobId);
      return { state: 'ended' };
    }
    const account = await findImportingAccount(tx, record.accountId);
    if (!account) return { state: 'ended' };
    const chunk = await nextFileChunk(tx, jobId);
    if (!chunk) {
      await tx`
        update imports set state = 'completed', started_at = coalesce(started_at, now()), finished_at = clock_timestamp()
        where job_id = ${jobId}`;
      await dropStagedRows(tx, jobId);
      await hooks.beforeCommit?.();
      return { state: 'completed' };
    }
    const written = await writeRows(tx, { kind: record.kind, jobId, accountId: record.accountId, account, rows: { firstIndex: chunk.firstIndex }, matchExternalIds: chunk.withExternalIds });
    const unchanged = written.sent - written.inserted - written.updated;
    await tx`
      update imports set
        state = 'running',
        started_at = coalesce(started_at, now()),
        inserted = inserted + ${written.inserted},
        updated = coalesce(updated, 0) + ${written.updated},
        unchanged = coalesce(unchanged, 0) + ${unchanged},
        processed = coalesce(processed, skipped) + ${written.sent}
      where job_id = ${jobId}`;
    await hooks.beforeCommit?.();
    return { state: 'written', kind: record.kind, rows: written.sent, changed: written.inserted + written.updated };
  });
}
