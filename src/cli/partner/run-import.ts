import type { SourceRow } from '../../shared/import/file/source-row.js';
import { externalIdOf } from '../../shared/rows/external-id.js';
import { reasonOf } from '../../shared/rows/validate-rows.js';
import type { RowErrorDetail } from '../../shared/rows/row-errors.js';
import { Batcher } from './batcher.js';
import type { RowChecker } from './check-row.js';
import type { Progress } from './progress.js';
import type { BatchOutcome } from './send-batch.js';
import type { ResultsSink } from './results.js';
import { batchSettler, type FailureSink } from './settle-batch.js';

export interface ImportRunInput {
  kind: string;
  /** each row's local check, and its JSON as sent: checkRow, or checkMergeRow with --merge (check-row.ts) */
  check: RowChecker;
  limits: { maxRows: number; maxBytes: number };
  rows: AsyncIterable<SourceRow>;
  /** undefined for a dry run: rows are validated and batched, never sent; `rowCount` rows are in `body` */
  send?: (body: string, rowCount: number) => Promise<BatchOutcome>;
  report?: FailureSink;
  /** --results: each written row's id and outcome (the batches then ask with `return=rows`) */
  results?: ResultsSink;
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

  const settle = batchSettler(input, totals, 'not imported', (counts) => {
    totals.inserted += counts.inserted;
    totals.updated += counts.updated;
    totals.unchanged += counts.unchanged;
  });

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

const DUPLICATE_IN_FILE: RowErrorDetail = { field: 'external_id', code: 'duplicate_external_id', message: 'appears more than once in this file' };
