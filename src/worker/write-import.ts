import type { Sql, TransactionSql } from '../shared/infra/db.js';
import type { ImportResult, ImportJob } from '../shared/import/import-job.js';
import { markImportStep } from '../shared/import/import-steps.js';
import { findImportRecord } from '../shared/repositories/import-records.js';
import { findImportingAccount, insertImportRecord, recordMatchedCounts, writeRows } from '../shared/repositories/imports.js';
import { AccountGoneError, ImportAbandonedError, ImportRowCountError, ImportRowsGoneError } from './write-errors.js';

/** An import job as the worker writes it; the write fails unless exactly `rowCount` rows are inserted. */
export interface ImportWrite extends Omit<ImportJob, 'matchExternalIds' | 'dryRun'>, Partial<Pick<ImportJob, 'matchExternalIds' | 'dryRun'>> {
  jobId: string;
  /**
   * the normalised rows as encodeImportRows wrote them, or their fetch: it is awaited only once
   * the import is recorded, so it overlaps the statements before; null when they are gone
   */
  rowsJson: string | Promise<string | null>;
}

/** Rolls a dry run's transaction back once its result is known. */
class DryRunRollback extends Error {
  override name = 'DryRunRollback';
  constructor(readonly result: ImportResult) {
    super('dry run: rolled back on purpose');
  }
}

/**
 * Writes one import in one transaction: its record in `imports` and all its rows with one
 * set-based statement (writeRows). Idempotent by job id: when the record already exists (the
 * job ran before, or runs twice at once), nothing is written and the recorded result is
 * returned; a record of a failed import (the API answered that it wrote nothing) throws
 * ImportAbandonedError. The table constraints check every row (types, lengths, categories, counts); a row
 * that breaks one, or a row count that differs from `rowCount`, rolls the whole import back, and
 * so do rows that turn out to be gone (ImportRowsGoneError). A dry run does all of it, then rolls
 * back and returns the result it would have had.
 */
export async function writeImport(
  sql: Sql,
  input: ImportWrite,
  hooks: { beforeCommit?: () => Promise<void> } = {},
): Promise<ImportResult> {
  try {
    return await sql.begin(async (tx) => {
      const result = await writeInTransaction(tx, input, hooks);
      if (input.dryRun === true) throw new DryRunRollback(result);
      return result;
    });
  } catch (error) {
    if (error instanceof DryRunRollback) return error.result;
    throw error;
  }
}

async function writeInTransaction(
  tx: TransactionSql,
  input: ImportWrite,
  hooks: { beforeCommit?: () => Promise<void> },
): Promise<ImportResult> {
  const account = await findImportingAccount(tx, input.accountId);
  if (!account) throw new AccountGoneError(`account ${input.accountId} no longer exists`);

  const matchExternalIds = input.matchExternalIds === true;
  const skipped = input.errors.length;
  // note: a concurrent duplicate blocks on the primary key here until the first commits, then
  // finds the record; so a job's rows are written at most once. With external ids the counts are
  // known only once the rows are written, and the record is completed then.
  const { jobId, accountId, kind, requestId, total, rowCount, errors, createdAt } = input;
  if (!(await insertImportRecord(tx, { jobId, accountId, kind, requestId, total, rowCount, errors, createdAt }))) {
    const previous = await findImportRecord(tx, jobId);
    if (!previous) throw new Error(`import ${jobId} is recorded but its result cannot be read`);
    if (previous.state === 'failed') throw new ImportAbandonedError(`import ${jobId} was answered "nothing was written"; it writes nothing`);
    if (previous.state === 'running') throw new Error(`import ${jobId} is recorded as an import not ended, not a bulk request's`);
    return previous.result;
  }

  markImportStep(requestId, 'write.recorded');
  const rows = await input.rowsJson;
  if (rows === null) throw new ImportRowsGoneError(`the rows of import ${jobId} are gone; nothing was written`);
  const written = await writeRows(tx, { kind, jobId, accountId, account, rows, matchExternalIds });
  if (written.sent !== rowCount) {
    throw new ImportRowCountError(`import ${jobId} holds ${written.sent} rows, not the ${rowCount} it announced`);
  }
  markImportStep(requestId, 'write.inserted');
  let result: ImportResult = { inserted: written.inserted, skipped, errors };
  if (matchExternalIds) {
    const unchanged = written.sent - written.inserted - written.updated;
    result = { inserted: written.inserted, updated: written.updated, unchanged, skipped, errors };
    await recordMatchedCounts(tx, jobId, { inserted: written.inserted, updated: written.updated, unchanged });
  }
  await hooks.beforeCommit?.();
  return result;
}
