import type { RowError, RowErrorDetail } from '../../shared/rows/row-errors.js';
import type { RowOutcome } from '../../shared/import/row-outcomes.js';
import type { Batch, RowFailure } from './batcher.js';
import { FatalError } from './fatal-error.js';
import type { Progress } from './progress.js';
import type { ResultsSink } from './results.js';
import type { BatchOutcome } from './send-batch.js';

/** Where failed rows go, a batch at a time, in file order. */
export interface FailureSink {
  add(failures: readonly RowFailure[]): Promise<void>;
}

/** The totals every batched run keeps, whatever its answers count (ImportTotals, RemovalTotals). */
export interface SettledTotals {
  failed: number;
  unaccounted: number;
  batches: number;
  settledThrough: number | null;
  replays: number;
}

/** What a batched run settles its batches with: runImport's or runRemoval's input. */
export interface BatchRun<Counts extends { rowErrors: RowError[] }> {
  /** undefined for a local dry run: the batch's local failures are settled, nothing is sent */
  send?: (body: string, rowCount: number) => Promise<BatchOutcome<Counts>>;
  report?: FailureSink;
  /** --results: the rows each written batch's answer names (`rows`), at their file locations */
  results?: ResultsSink;
  progress: Progress;
}

/**
 * The one way a batch is settled, for imports (run-import.ts) and archives or deletes
 * (run-removal.ts): sent, its outcome turned into failures at their file locations, those written
 * to the report in file order, the totals and progress brought up to date, and only then a
 * FatalError rethrown. note: the order matters: `settledThrough` must say where a second run
 * picks up even when this batch stopped the run.
 */
export function batchSettler<Counts extends { rowErrors: RowError[] }>(
  run: BatchRun<Counts>,
  totals: SettledTotals,
  /** how the report's reason begins for a batch a fatal error left unsent: "not imported", "not done" */
  notSent: string,
  /** adds what a written batch's answer counts to the run's own totals (inserted, archived, ...) */
  addCounts: (counts: Counts) => void,
): (batch: Batch) => Promise<void> {
  let done = 0;
  return async (batch) => {
    const failures: RowFailure[] = [...batch.failures];
    let unaccounted = 0;
    let fatal: FatalError | undefined;
    if (batch.rows.length > 0 && run.send) {
      let outcome: BatchOutcome<Counts>;
      try {
        outcome = await run.send(batch.body(), batch.rows.length);
      } catch (error) {
        if (!(error instanceof FatalError)) throw error;
        fatal = error;
        outcome = error.batchState === 'unknown' ? { type: 'unknown', reason: error.message } : { type: 'rejected', reason: `${notSent}: ${error.message}` };
      }
      if (!fatal) totals.batches += 1;
      if (outcome.type === 'imported') {
        addCounts(outcome);
        if (outcome.replayed) totals.replays += 1;
        if (run.results) await resultsOf(run.results, batch, outcome);
        for (const error of outcome.rowErrors) {
          const location = batch.locations[error.index];
          if (location !== undefined) failures.push(failureOf(location, error));
        }
      } else if (outcome.type === 'rejected' && outcome.rowErrors) {
        const errors = new Map(outcome.rowErrors.map((e) => [e.index, e]));
        batch.locations.forEach((location, index) => {
          const error = errors.get(index);
          failures.push(error ? failureOf(location, error) : { location, reason: outcome.reason });
        });
      } else if (outcome.type === 'unknown') {
        unaccounted = batch.locations.length;
        for (const location of batch.locations) failures.push({ location, reason: `${UNACCOUNTED}: ${outcome.reason}` });
      } else {
        for (const location of batch.locations) failures.push({ location, reason: outcome.reason });
      }
    }
    failures.sort((a, b) => a.location - b.location);
    await run.report?.add(failures);
    totals.failed += failures.length - unaccounted;
    totals.unaccounted += unaccounted;
    done += batch.rows.length + batch.failures.length;
    const last = Math.max(batch.locations.at(-1) ?? -1, batch.failures.at(-1)?.location ?? -1);
    if (last >= 0) totals.settledThrough = last;
    run.progress.update(done);
    if (fatal) throw fatal;
  };
}

/**
 * The rows a written batch's answer names, at their file locations. note: a batch answered 504 and
 * settled by watching its import (look-up-named-import.ts) has counts but no `rows`: its rows are
 * counted as not returned, for the run's notice.
 */
async function resultsOf(results: ResultsSink, batch: Batch, outcome: { rows?: RowOutcome[]; rowErrors: RowError[] }): Promise<void> {
  if (outcome.rows === undefined) {
    results.notReturned(batch.rows.length - outcome.rowErrors.length);
    return;
  }
  await results.add(outcome.rows.flatMap((row) => {
    const location = batch.locations[row.index];
    return location === undefined ? [] : [{ location, row }];
  }));
}

/** How the report's reason of a row begins when the CLI cannot know what became of it. */
export const UNACCOUNTED = 'unaccounted for';

/** A row the server refused, as the report writes it: at `location`, with its reason, details and external_id. */
export function failureOf(location: number, error: { reason: string; details: RowErrorDetail[]; external_id?: string }): RowFailure {
  return { location, reason: error.reason, details: error.details, ...(error.external_id === undefined ? {} : { externalId: error.external_id }) };
}
