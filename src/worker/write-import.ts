import type { Sql } from '../shared/infra/db.js';
import type { ImportResult, ImportJob } from '../shared/import/import-job.js';
import { markImportStep } from '../shared/import/import-steps.js';
import { findImportRecord } from '../shared/repositories/import-records.js';
import {
  copyRowsIn,
  isCopyRefused,
  findImportingAccount,
  insertImportRecord,
  isImportRecordTaken,
  recordImportWithRows,
  type ImportStatementOutcome,
  type RowsWritten,
} from '../shared/repositories/imports.js';
import { copyNewRows } from '../shared/repositories/copy-new-rows.js';
import { mergeFailureError, recordMergeErrors, recordMergeWithRows } from '../shared/repositories/merge-rows.js';
import type { RowError } from '../shared/rows/row-errors.js';
import type { RowOutcome } from '../shared/import/row-outcomes.js';
import { recordedResult } from './recorded-result.js';
import { AccountGoneError, ImportRowCountError, ImportRowsGoneError, ImportRowsRefusedError, refuseMergeRace } from './write-errors.js';

/** An import job as the worker writes it; the write fails unless exactly `rowCount` rows are inserted. */
export interface ImportWrite
  extends Omit<ImportJob, 'matchExternalIds' | 'dryRun' | 'merge' | 'rowsFormat' | 'returnRows'>,
    Partial<Pick<ImportJob, 'matchExternalIds' | 'dryRun' | 'merge' | 'returnRows'>> {
  importId: string;
  /**
   * the normalised rows: bytes of `COPY` text (encodeCopyRows), or JSON text (encodeImportRows,
   * encodeMergeRows); or their fetch still under way (it runs while the job is checked and the
   * write gets a connection); null when they are gone
   */
  rows: ImportRows | Promise<ImportRows | null>;
}

/** An import's rows as the worker has them: `COPY` text as bytes, or JSON. */
export type ImportRows = Uint8Array | string;

type Hooks = { beforeCommit?: () => Promise<void> };

/** Rolls a dry run's transaction back once its result is known. */
class DryRunRollback extends Error {
  override name = 'DryRunRollback';
  constructor(readonly result: ImportResult) {
    super('dry run: rolled back on purpose');
  }
}

/** Rolls back the rows copyNewRows copied once another run of the job is found to have recorded it. */
class RecordTakenRollback extends Error {
  override name = 'RecordTakenRollback';
  constructor() {
    super('another run of this import recorded it: its rows are rolled back');
  }
}

/**
 * Writes one import: its record in `imports` and all its rows, in one statement
 * (recordImportWithRows). Rows in `COPY` text are first streamed into the transaction's table of
 * copied rows (copyRowsIn), which the statement then reads, or, when they can only be new, straight
 * into their table, the record inserted behind them (copyNewRows); rows in JSON are the
 * statement's parameter, and the statement is one round trip and its own transaction.
 * Idempotent by the import's id: when the record already exists (the job ran before, or runs twice at
 * once), nothing is written and the recorded result is returned; a record of a failed import (the
 * API answered that it wrote nothing) throws ImportAbandonedError. The table constraints check
 * every row (types, lengths, categories, counts); a row that breaks one, or a row count that
 * differs from `rowCount` (ImportRowCountError), leaves nothing written, and so do rows that turn
 * out to be gone (ImportRowsGoneError). A dry run does all of it, then rolls back and returns the
 * result it would have had.
 *
 * note: the statement needs the rows, so it waits for their fetch; nothing goes to PostgreSQL
 * before, as every statement sent ahead of the rows would be a round trip more. A dry run and a
 * write given `hooks.beforeCommit` (tests stop a write there) send the same statement in a
 * transaction, BEGIN and COMMIT around it.
 */
export async function writeImport(sql: Sql, input: ImportWrite, hooks: Hooks = {}): Promise<ImportResult> {
  const rows = await input.rows;
  if (rows === null) return resultWithoutRows(sql, input);
  const returnRows = input.returnRows === true;
  // note: whole rows tell their request index only in indexed `COPY` text (prepare-import.ts);
  // a job that asks for rows with whole rows as JSON was made by no API: it writes nothing.
  if (returnRows && input.merge !== true && typeof rows === 'string') throw new ImportRowCountError(`import ${input.importId} asks for its rows' outcomes without their indexes`);
  const reading = { withRows: returnRows };
  // note: the record and the rows are one statement: this step marks the rows at hand, the next
  // the import written.
  markImportStep(input.requestId, 'write.recorded');
  const statement = {
    importId: input.importId,
    accountId: input.accountId,
    kind: input.kind,
    requestId: input.requestId,
    total: input.total,
    rowCount: input.rowCount,
    errors: input.errors,
    createdAt: input.createdAt,
    matchExternalIds: input.matchExternalIds === true,
    returnRows,
  };
  if (input.merge === true) return writeMerge(sql, { ...statement, rows: textOf(rows) }, input, hooks);
  const copied = typeof rows !== 'string';
  // note: rows that carry no external_id can only be new, and, unless each row's outcome is asked
  // for, go straight into their table (copyNewRows); the others through the table of copied rows.
  const newRowsOnly = copied && input.matchExternalIds !== true && !returnRows;
  let outcome: ImportStatementOutcome;
  try {
    outcome =
      copied || input.dryRun === true || hooks.beforeCommit !== undefined
        ? await sql.begin(async (tx) => {
            let written: ImportStatementOutcome & { taken?: boolean };
            if (newRowsOnly) written = await copyNewRows(tx, { ...statement, rows });
            else {
              if (copied) await copyRowsIn(tx, input.kind, rows, { indexed: returnRows });
              written = await recordImportWithRows(tx, { ...statement, rows: copied ? { copiedKind: input.kind, indexed: returnRows } : rows });
            }
            if (written.taken === true) throw new RecordTakenRollback();
            if (!written.recorded) return written; // note: it wrote nothing, so its commit commits nothing
            refuseMergeRace(input.importId, written.raced ?? 0);
            await hooks.beforeCommit?.();
            if (input.dryRun === true) throw new DryRunRollback(resultOf(input, written));
            return written;
          })
        : await recordImportWithRows(sql, { ...statement, rows });
  } catch (error) {
    if (error instanceof DryRunRollback) return error.result;
    if (copied && isCopyRefused(error)) throw new ImportRowsRefusedError(`the rows of import ${input.importId} were refused by COPY; nothing was written`);
    // note: a run of the same job committed while this one's statement ran; its rows went with it.
    if (isImportRecordTaken(error) || error instanceof RecordTakenRollback) return recordedResult(input.importId, await findImportRecord(sql, input.importId, reading));
    throw error;
  }
  if (!outcome.recorded) return resultOfNothingWritten(sql, input, outcome);
  markImportStep(input.requestId, 'write.inserted');
  return resultOf(input, outcome);
}

/** A merge's rows are JSON whatever carried them (prepare-import.ts). */
function textOf(rows: ImportRows): string {
  return typeof rows === 'string' ? rows : Buffer.from(rows.buffer, rows.byteOffset, rows.byteLength).toString('utf8');
}

function resultOf(input: ImportWrite, written: RowsWritten & { rows?: RowOutcome[] | null }, errors: RowError[] = input.errors): ImportResult {
  const skipped = errors.length;
  const rows = input.returnRows === true ? { rows: answeredRows(input, written.rows ?? []) } : {};
  if (input.matchExternalIds !== true) return { inserted: written.inserted, skipped, errors, ...rows };
  const unchanged = written.sent - written.inserted - written.updated - (skipped - input.errors.length);
  return { inserted: written.inserted, updated: written.updated, unchanged, skipped, errors, ...rows };
}

/** The rows' outcomes as answered: a dry run names no id for a row it would insert (its id was rolled back with it). */
function answeredRows(input: ImportWrite, rows: RowOutcome[]): RowOutcome[] {
  return input.dryRun === true ? rows.map((row) => (row.outcome === 'inserted' ? { ...row, id: null } : row)) : rows;
}

/**
 * Writes an import with `update=merge` (docs/catalogue.md#merge) in a transaction: the statement
 * (recordMergeWithRows), then the errors of the rows that could neither merge nor be created
 * beside the request's. Exactly once and dry runs as writeImport. A whole row whose id another
 * transaction created meanwhile rolls everything back (MergeRaceError): the job's next attempt
 * merges it.
 */
async function writeMerge(sql: Sql, statement: Parameters<typeof recordMergeWithRows>[1], input: ImportWrite, hooks: Hooks): Promise<ImportResult> {
  let outcome;
  try {
    outcome = await sql.begin(async (tx) => {
      const written = await recordMergeWithRows(tx, statement);
      if (!written.recorded) return { written, errors: input.errors };
      refuseMergeRace(input.importId, written.raced);
      const errors = [...input.errors, ...written.failed.map(mergeFailureError)].sort((a, b) => a.index - b.index);
      if (written.failed.length > 0) await recordMergeErrors(tx, input.importId, errors);
      await hooks.beforeCommit?.();
      if (input.dryRun === true) throw new DryRunRollback(resultOf(input, written, errors));
      return { written, errors };
    });
  } catch (error) {
    if (error instanceof DryRunRollback) return error.result;
    if (isImportRecordTaken(error)) return recordedResult(input.importId, await findImportRecord(sql, input.importId, { withRows: input.returnRows === true }));
    throw error;
  }
  if (!outcome.written.recorded) return resultOfNothingWritten(sql, input, outcome.written);
  markImportStep(input.requestId, 'write.inserted');
  return resultOf(input, outcome.written, outcome.errors);
}

/** Why the statement wrote nothing: the account is gone, the import was recorded before, or its rows are not `rowCount`. */
async function resultOfNothingWritten(sql: Sql, input: ImportWrite, outcome: ImportStatementOutcome): Promise<ImportResult> {
  const { importId, rowCount } = input;
  if (!outcome.accountFound) throw new AccountGoneError(`account ${input.accountId} no longer exists`);
  // note: a recorded import answers with its record whatever rows its job now holds.
  const previous = await findImportRecord(sql, importId, { withRows: input.returnRows === true });
  if (previous) return recordedResult(importId, previous);
  if (outcome.sent !== rowCount) throw new ImportRowCountError(`import ${importId} holds ${outcome.sent} rows, not the ${rowCount} it announced`);
  throw new Error(`import ${importId} is recorded but its result cannot be read`);
}

/**
 * A job whose rows are gone: the recorded result when a run of it wrote it (and died before its
 * acknowledgement), else ImportRowsGoneError, having written nothing. note: rare (a rerun, a
 * withdrawn or expired job), so it takes a transaction of several statements: the record's
 * insert waits for a run of the same job still under way and then finds its record; when it
 * records the import instead, the error rolls that back.
 */
async function resultWithoutRows(sql: Sql, input: ImportWrite): Promise<ImportResult> {
  const { importId, accountId, kind, requestId, total, rowCount, errors, createdAt } = input;
  return sql.begin(async (tx) => {
    if (!(await findImportingAccount(tx, accountId))) throw new AccountGoneError(`account ${accountId} no longer exists`);
    if (await insertImportRecord(tx, { importId, accountId, kind, requestId, total, rowCount, errors, createdAt })) {
      throw new ImportRowsGoneError(`the rows of import ${importId} are gone; nothing was written`);
    }
    return recordedResult(importId, await findImportRecord(tx, importId, { withRows: input.returnRows === true }));
  });
}
