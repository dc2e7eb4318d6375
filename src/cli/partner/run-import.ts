import type { z } from 'zod';
import { Batcher, type Batch, type RowFailure } from './batcher.js';
import { checkRow } from './check-row.js';
import type { Progress } from './progress.js';
import { FatalError, type BatchOutcome } from './send-batch.js';
import type { SourceRow } from './source-row.js';

/** Where failed rows go, a batch at a time, in file order. */
export interface FailureSink {
  add(failures: readonly RowFailure[]): Promise<void>;
}

export interface ImportRunInput {
  kind: string;
  schema: z.ZodType;
  fieldNames: readonly string[];
  limits: { maxRows: number; maxBytes: number };
  rows: AsyncIterable<SourceRow>;
  /** undefined for a dry run: rows are validated and batched, never sent */
  send?: (body: string) => Promise<BatchOutcome>;
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
  failed: number;
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
 * unreachable, authentication) or InputError (the file cannot be read on) with `totals` kept
 * up to date, the open batch unsent.
 */
export async function runImport(input: ImportRunInput, totals: ImportTotals = emptyTotals()): Promise<ImportTotals> {
  const batcher = new Batcher(input.kind, input.limits);
  let done = 0;

  const settle = async (batch: Batch): Promise<void> => {
    const failures: RowFailure[] = [...batch.failures];
    let fatal: FatalError | undefined;
    if (batch.rows.length > 0 && input.send) {
      let outcome: BatchOutcome;
      try {
        outcome = await input.send(batch.body());
      } catch (error) {
        if (!(error instanceof FatalError)) throw error;
        fatal = error;
        const prefix = error.batchState === 'unknown' ? 'outcome unknown, check before re-sending' : 'not imported';
        outcome = { type: 'rejected', reason: `${prefix}: ${error.message}` };
      }
      if (!fatal) totals.batches += 1;
      if (outcome.type === 'imported') {
        totals.inserted += outcome.inserted;
        if (outcome.replayed) totals.replays += 1;
        for (const { index, reason } of outcome.rowErrors) {
          const location = batch.locations[index];
          if (location !== undefined) failures.push({ location, reason });
        }
      } else if (outcome.type === 'rejected' && outcome.rowErrors) {
        const reasons = new Map(outcome.rowErrors.map((e) => [e.index, e.reason]));
        batch.locations.forEach((location, index) => failures.push({ location, reason: reasons.get(index) ?? outcome.reason }));
      } else {
        for (const location of batch.locations) failures.push({ location, reason: outcome.reason });
      }
    }
    failures.sort((a, b) => a.location - b.location);
    await input.report?.add(failures);
    totals.failed += failures.length;
    done += batch.rows.length + batch.failures.length;
    const last = Math.max(batch.locations.at(-1) ?? -1, batch.failures.at(-1)?.location ?? -1);
    if (last >= 0) totals.settledThrough = last;
    input.progress.update(done);
    if (fatal) throw fatal;
  };

  for await (const source of input.rows) {
    if (input.shouldStop?.()) break;
    totals.rowsRead += 1;
    if ('error' in source) {
      batcher.addFailure(source.location, source.error);
    } else {
      const check = checkRow(input.schema, input.fieldNames, source.value);
      if (!check.ok) batcher.addFailure(source.location, check.reason);
      else if (batcher.addRow(source.location, check.json)) totals.valid += 1;
      else batcher.addFailure(source.location, `row is larger than a request may be (${batcher.maxRowBytes} bytes)`);
    }
    for (const batch of batcher.takeReady()) await settle(batch);
  }
  if (!input.shouldStop?.()) {
    for (const batch of batcher.flush()) await settle(batch);
  }
  return totals;
}

export function emptyTotals(): ImportTotals {
  return { rowsRead: 0, valid: 0, inserted: 0, failed: 0, batches: 0, settledThrough: null, replays: 0 };
}
