import type { SourceRow } from '../../shared/import/file/source-row.js';
import { externalIdOf } from '../../shared/rows/external-id.js';
import { reasonOf } from '../../shared/rows/validate-rows.js';
import type { RowErrorDetail } from '../../shared/rows/row-errors.js';
import { Batcher, type Batch, type RowFailure } from './batcher.js';
import type { RowChecker } from './check-row.js';
import type { Progress } from './progress.js';
import { FatalError, type BatchOutcome } from './send-batch.js';

/** Where failed rows go, a batch at a time, in file order. */
export interface FailureSink {
  add(failures: readonly RowFailure[]): Promise<void>;
}

export interface ImportRunInput {
  kind: string;
  /** each row's local check, and its JSON as sent: checkRow, or checkMergeRow with --merge (check-row.ts) */
  check: RowChecker;
  limits: { maxRows: number; maxBytes: number };
  rows: AsyncIterable<SourceRow>;
  /** undefined for a dry run: rows are validated and batched, never sent; `rowCount` rows are in `body` */
  send?: (body: string, rowCount: number) => Promise<BatchOutcome>;
  report?: FailureSink;
  progress: Progress;
  /** checked before each row: stop reading (Ctrl-C) */
  shouldStop?: () => boolean;
}

export interface ImportTotals {
  rowsRead: number;
  /** rows that passed local validation */
  valid: number;
  inserted: number;
  /** rows that matched an external_id and were changed (would be, in a server dry run) */
  updated: number;
  /** rows that matched an external_id and were already as sent */
  unchanged: number;
  /** rows that were not written (in a server dry run: would not be); each is in the report */
  failed: number;
  /**
   * rows whose outcome the CLI cannot know: a reply it could not believe or read, or a lost reply
   * that may not be retried; each is in the report, and any of them may have been written
   */
  unaccounted: number;
  /** requests that got a final answer */
  batches: number;
  /** every row up to this location is settled (imported or in the report); null before the first */
  settledThrough: number | null;
  /** replies that were idempotent replays: a retried batch the server had already imported */
  replays: number;
}

/**
 * Reads, validates, batches and sends, one batch at a time, in file order. A batch is settled
 * (its failures written to the report) before the next is sent, so when the run stops early,
 * `settledThrough` says exactly where a second run should pick up. Throws FatalError (server
 * unreachable, authentication) or FileReadError (the file cannot be read on) with `totals` kept
 * up to date, the open batch unsent.
 */
export async function runImport(input: ImportRunInput, totals: ImportTotals = emptyTotals()): Promise<ImportTotals> {
  const batcher = new Batcher(input.kind, input.limits);
  let done = 0;

  const settle = async (batch: Batch): Promise<void> => {
    const failures: RowFailure[] = [...batch.failures];
    let unaccounted = 0;
    let fatal: FatalError | undefined;
    if (batch.rows.length > 0 && input.send) {
      let outcome: BatchOutcome;
      try {
        outcome = await input.send(batch.body(), batch.rows.length);
      } catch (error) {
        if (!(error instanceof FatalError)) throw error;
        fatal = error;
        outcome = error.batchState === 'unknown' ? { type: 'unknown', reason: error.message } : { type: 'rejected', reason: `not imported: ${error.message}` };
      }
      if (!fatal) totals.batches += 1;
      if (outcome.type === 'imported') {
        totals.inserted += outcome.inserted;
        totals.updated += outcome.updated;
        totals.unchanged += outcome.unchanged;
        if (outcome.replayed) totals.replays += 1;
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
    await input.report?.add(failures);
    totals.failed += failures.length - unaccounted;
    totals.unaccounted += unaccounted;
    done += batch.rows.length + batch.failures.length;
    const last = Math.max(batch.locations.at(-1) ?? -1, batch.failures.at(-1)?.location ?? -1);
    if (last >= 0) totals.settledThrough = last;
    input.progress.update(done);
    if (fatal) throw fatal;
  };

  // note: every external_id of the file, so that a later row with the same id fails here as it
  // would within one request, whichever batches the two land in (about 100 bytes per id).
  const seenIds = new Set<string>();
  /** Batches a row that passes, or records why it fails; true when it was batched. */
  const checkSourceRow = (location: number, value: unknown): boolean => {
    const externalId = externalIdOf(value);
    const repeated = externalId !== undefined && seenIds.has(externalId);
    if (externalId !== undefined) seenIds.add(externalId);
    const check = input.check(value);
    const problems: RowErrorDetail[] = [...(repeated ? [{ ...DUPLICATE_IN_FILE }] : []), ...(check.ok ? [] : check.details)];
    const withId = externalId === undefined ? {} : { externalId };
    if (problems.length > 0) batcher.addFailure({ location, reason: reasonOf(problems), details: problems, ...withId });
    else if (check.ok && batcher.addRow(location, check.json)) return true;
    else batcher.addFailure({ location, reason: `row is larger than a request may be (${batcher.maxRowBytes} bytes)`, ...withId });
    return false;
  };
  for await (const source of input.rows) {
    if (input.shouldStop?.()) break;
    totals.rowsRead += 1;
    if ('error' in source) batcher.addFailure({ location: source.location, reason: source.error });
    else if (checkSourceRow(source.location, source.value)) totals.valid += 1;
    for (const batch of batcher.takeReady()) await settle(batch);
  }
  if (!input.shouldStop?.()) {
    for (const batch of batcher.flush()) await settle(batch);
  }
  return totals;
}

export function emptyTotals(): ImportTotals {
  return { rowsRead: 0, valid: 0, inserted: 0, updated: 0, unchanged: 0, failed: 0, unaccounted: 0, batches: 0, settledThrough: null, replays: 0 };
}

/** How the report's reason of a row begins when the CLI cannot know what became of it. */
export const UNACCOUNTED = 'unaccounted for';

const DUPLICATE_IN_FILE: RowErrorDetail = { field: 'external_id', code: 'duplicate_external_id', message: 'appears more than once in this file' };

/** A row the server refused, as the report writes it: at `location`, with its reason, details and external_id. */
export function failureOf(location: number, error: { reason: string; details: RowErrorDetail[]; external_id?: string }): RowFailure {
  return { location, reason: error.reason, details: error.details, ...(error.external_id === undefined ? {} : { externalId: error.external_id }) };
}
