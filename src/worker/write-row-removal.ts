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
  type LockedRow,
  type RemovedRows,
  type RowRemovalCounts,
} from '../shared/repositories/row-removals.js';
import { byIndex, entryError, notFoundDetail } from '../shared/rows/removal-entries.js';
import type { RowError } from '../shared/rows/row-errors.js';
import type { RowOutcome } from '../shared/import/row-outcomes.js';
import { recordRowOutcomes } from '../shared/repositories/row-outcomes.js';
import { recordedResult } from './recorded-result.js';
import { AccountGoneError, ImportRowCountError, ImportRowsGoneError } from './write-errors.js';

/** An archive or delete job as the worker writes it. */
export interface RowRemovalWrite extends Omit<RowRemovalJob, 'returnRows'> {
  importId: string;
  /** `?return=rows`: the result (and the record) carry each entry's row and outcome */
  returnRows?: boolean;
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
      if (!claimed) return recordedResult(importId, await findImportRecord(tx, importId, { withRows: input.returnRows === true }));
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
      const returning = input.returnRows === true;
      const removed = action === 'archive' ? await archiveRows(tx, kind, targets, { returning }) : await deleteRows(tx, kind, targets, { returning });
      // note: the rows are locked: each one found is archived or deleted by this statement.
      if (removed.count !== targets.length) throw new Error(`import ${importId}: ${removed.count} of the ${targets.length} locked rows were ${action}d`);
      const counts: RowRemovalCounts = { removed: removed.count, unchanged, errors: byIndex(input.errors, notFound) };
      await completeRowRemovalRecord(tx, importId, action, counts);
      const outcomes = returning ? entryOutcomes(action, entries, rows, removed.rows) : undefined;
      if (outcomes !== undefined && !input.dryRun) await recordRowOutcomes(tx, importId, outcomes);
      markImportStep(input.requestId, 'write.inserted');
      const result = { ...resultOf(action, counts), ...(outcomes === undefined ? {} : { rows: outcomes }) };
      await hooks.beforeCommit?.();
      if (input.dryRun) throw new DryRunRollback(result);
      return result;
    });
  } catch (error) {
    if (error instanceof DryRunRollback) return error.result;
    throw error;
  }
}

/**
 * Each found entry's row and outcome, in request order (`?return=rows`): a row the statement
 * archived or deleted as it returned it, a row archived already (`unchanged`) as it was locked.
 * note: the entries are in index order (checkRemovalBody), and each names a row of its own
 * (a repeat fails as `duplicate` in the API).
 */
function entryOutcomes(
  action: RowRemovalWrite['action'],
  entries: readonly { index: number; key: string }[],
  locked: ReadonlyMap<string, LockedRow>,
  removed: RemovedRows['rows'],
): RowOutcome[] {
  const removedById = new Map(removed.map((row) => [row.id, row]));
  const outcomes: RowOutcome[] = [];
  for (const { index, key } of entries) {
    const row = locked.get(key);
    if (row === undefined) continue;
    const changed = removedById.get(row.id);
    if (changed !== undefined) outcomes.push({ index, id: changed.id, external_id: changed.externalId, outcome: action === 'archive' ? 'archived' : 'deleted' });
    else outcomes.push({ index, id: row.id, external_id: row.externalId, outcome: 'unchanged' });
  }
  return outcomes;
}

function resultOf(action: RowRemovalWrite['action'], { removed, unchanged, errors }: RowRemovalCounts): AnyImportResult {
  const skipped = errors.length;
  return action === 'archive' ? { inserted: 0, archived: removed, unchanged, skipped, errors } : { inserted: 0, deleted: removed, skipped, errors };
}

