import type { Sql } from '../shared/infra/db.js';
import { decodeRemovalEntries, type AnyImportResult, type RowRemovalJob } from '../shared/import/row-removal-job.js';
import { markImportStep } from '../shared/import/import-steps.js';
import { findImportRecord } from '../shared/repositories/import-records.js';
import { findImportingAccount } from '../shared/repositories/imports.js';
import {
  archiveRows,
  claimRowRemovalRecord,
  completeRowRemovalRecord,
  deleteRows,
  lockNamedRows,
  type RowRemovalCounts,
} from '../shared/repositories/row-removals.js';
import { byIndex, entryError, notFoundDetail } from '../shared/rows/removal-entries.js';
import type { RowError } from '../shared/rows/row-errors.js';
import { recordedResult } from './recorded-result.js';
import { AccountGoneError, ImportRowCountError, ImportRowsGoneError } from './write-errors.js';

/** An archive or delete job as the worker writes it. */
export interface RowRemovalWrite extends RowRemovalJob {
  importId: string;
  /** the entries as encodeRemovalEntries wrote them, or their fetch still under way; null when they are gone */
  entriesJson: string | Promise<string | null>;
}

type Hooks = { beforeCommit?: () => Promise<void> };

/** Rolls a dry run's transaction back once its result is known. */
class DryRunRollback extends Error {
  override name = 'DryRunRollback';
  constructor(readonly result: AnyImportResult) {
    super('dry run: rolled back on purpose');
  }
}

/**
 * Writes one archive or delete import (docs/catalogue.md#archive-and-delete) in one transaction:
 * its record, claimed first by the job's id (claimRowRemovalRecord), so that a job that runs twice,
 * or at once on two workers, writes once and answers the recorded result; then the named rows,
 * looked up again and locked (an entry whose row is gone since the API looked fails `not_found`),
 * archived or deleted; then the record's counts and failed entries. A dry run does all of it, then
 * rolls back. A record of a failed import (the API answered that it wrote nothing) throws
 * ImportAbandonedError; entries that are gone, ImportRowsGoneError; entries that are not what the
 * job announced, ImportRowCountError: each having written nothing.
 */
export async function writeRowRemoval(sql: Sql, input: RowRemovalWrite, hooks: Hooks = {}): Promise<AnyImportResult> {
  const { importId, accountId, kind, action, by } = input;
  // note: fetched while the transaction begins; awaited once the record is claimed.
  const entriesJson = Promise.resolve(input.entriesJson);
  entriesJson.catch(() => undefined);
  try {
    return await sql.begin(async (tx) => {
      if (!(await findImportingAccount(tx, accountId))) throw new AccountGoneError(`account ${accountId} no longer exists`);
      const claimed = await claimRowRemovalRecord(tx, { importId, accountId, kind, action, requestId: input.requestId, total: input.total, errors: [], createdAt: input.createdAt });
      if (!claimed) return recordedResult(importId, await findImportRecord(tx, importId));
      const json = await entriesJson;
      if (json === null) throw new ImportRowsGoneError(`the entries of import ${importId} are gone; nothing was written`);
      const entries = decodeRemovalEntries(json);
      if (entries === undefined || entries.length !== input.entryCount) throw new ImportRowCountError(`import ${importId} does not hold the ${input.entryCount} entries it announced`);
      markImportStep(input.requestId, 'write.recorded');

      const rows = new Map((await lockNamedRows(tx, { kind, accountId, by, keys: entries.map((e) => e.key) })).map((row) => [row.key, row]));
      const notFound: RowError[] = [];
      const targets: string[] = [];
      let unchanged = 0;
      for (const { index, key } of entries) {
        const row = rows.get(key);
        if (row === undefined) notFound.push(entryError(by, index, [notFoundDetail(by, kind)], key));
        else if (action === 'archive' && row.archived) unchanged += 1;
        else targets.push(row.id);
      }
      const removed = action === 'archive' ? await archiveRows(tx, kind, targets) : await deleteRows(tx, kind, targets);
      // note: the rows are locked: each one found is archived or deleted by this statement.
      if (removed !== targets.length) throw new Error(`import ${importId}: ${removed} of the ${targets.length} locked rows were ${action}d`);
      const counts: RowRemovalCounts = { removed, unchanged, errors: byIndex(input.errors, notFound) };
      await completeRowRemovalRecord(tx, importId, action, counts);
      markImportStep(input.requestId, 'write.inserted');
      const result = resultOf(action, counts);
      await hooks.beforeCommit?.();
      if (input.dryRun) throw new DryRunRollback(result);
      return result;
    });
  } catch (error) {
    if (error instanceof DryRunRollback) return error.result;
    throw error;
  }
}

function resultOf(action: RowRemovalWrite['action'], { removed, unchanged, errors }: RowRemovalCounts): AnyImportResult {
  const skipped = errors.length;
  return action === 'archive' ? { inserted: 0, archived: removed, unchanged, skipped, errors } : { inserted: 0, deleted: removed, skipped, errors };
}

