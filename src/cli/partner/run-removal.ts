import type { SourceRow } from '../../shared/import/file/source-row.js';
import type { EntryForm, RowRemovalAction } from '../../shared/import/row-removal-job.js';
import { checkEntry, ENTRY_ARRAYS, MAX_REMOVAL_ENTRIES } from '../../shared/rows/removal-entries.js';
import type { RowErrorDetail } from '../../shared/rows/row-errors.js';
import { reasonOf } from '../../shared/rows/validate-rows.js';
import { Batcher } from './batcher.js';
import type { CheckedRemoval } from './check-removal-reply.js';
import type { Progress } from './progress.js';
import type { BatchOutcome } from './send-batch.js';
import { batchSettler, type FailureSink } from './settle-batch.js';

/** An archive's or delete's body: at most 1 MB (docs/catalogue.md#archive-and-delete). */
export const REMOVAL_BODY_MAX_BYTES = 1_048_576;

export interface RemovalRunInput {
  action: RowRemovalAction;
  /** how the file's entries name rows: external_ids, or our ids (--ids) */
  by: EntryForm;
  entries: AsyncIterable<SourceRow>;
  /** undefined for a local dry run: entries are checked and batched, never sent */
  send?: (body: string, entryCount: number) => Promise<BatchOutcome<CheckedRemoval>>;
  report?: FailureSink;
  progress: Progress;
  /** checked before each entry: stop reading (Ctrl-C) */
  shouldStop?: () => boolean;
}

export interface RemovalTotals {
  entriesRead: number;
  /** entries that passed the local checks */
  valid: number;
  archived: number;
  /** rows that were archived already */
  unchanged: number;
  deleted: number;
  /** entries that failed (locally or on the server); each is in the report */
  failed: number;
  /** entries of a batch whose outcome the CLI cannot know; each is in the report */
  unaccounted: number;
  batches: number;
  /** every entry up to this line is settled; null before the first */
  settledThrough: number | null;
  /** batches a retry found done already (Idempotency-Key replay) */
  replays: number;
}

export function emptyRemovalTotals(): RemovalTotals {
  return { entriesRead: 0, valid: 0, archived: 0, unchanged: 0, deleted: 0, failed: 0, unaccounted: 0, batches: 0, settledThrough: null, replays: 0 };
}

const DUPLICATE_IN_FILE = (by: EntryForm): RowErrorDetail => ({ field: by, code: 'duplicate', message: 'names the same row as an earlier line of this file' });

/**
 * Reads the entries, checks each with the server's rules (checkEntry), batches them by 1,000 in
 * file order and sends one batch at a time, each settled (its failures in the report) before the
 * next is sent, as runImport does for rows. A later line naming the same row as an earlier one
 * fails here, whichever batches the two would land in. Throws FatalError (server unreachable,
 * authentication) or FileReadError with `totals` up to date, the open batch unsent.
 */
export async function runRemoval(input: RemovalRunInput, totals: RemovalTotals = emptyRemovalTotals()): Promise<RemovalTotals> {
  const { by } = input;
  const batcher = new Batcher(ENTRY_ARRAYS[by], { maxRows: MAX_REMOVAL_ENTRIES, maxBytes: REMOVAL_BODY_MAX_BYTES });

  const settle = batchSettler(input, totals, 'not done', (counts) => {
    totals.archived += counts.archived;
    totals.unchanged += counts.unchanged;
    totals.deleted += counts.deleted;
  });

  // note: every key of the file (an id is at most 100 characters)
  const seen = new Set<string>();
  for await (const source of input.entries) {
    if (input.shouldStop?.()) break;
    totals.entriesRead += 1;
    if ('error' in source) {
      batcher.addFailure({ location: source.location, reason: `${by}: ${source.error}` });
    } else {
      const checked = checkEntry(by, source.value);
      const problem = 'key' in checked ? (seen.has(checked.key) ? DUPLICATE_IN_FILE(by) : undefined) : checked;
      const withId = 'key' in checked && by === 'external_id' ? { externalId: checked.key } : {};
      if (problem !== undefined) batcher.addFailure({ location: source.location, reason: reasonOf([problem]), details: [problem], ...withId });
      else if ('key' in checked && batcher.addRow(source.location, JSON.stringify(source.value))) {
        seen.add(checked.key);
        totals.valid += 1;
      }
    }
    for (const batch of batcher.takeReady()) await settle(batch);
  }
  if (!input.shouldStop?.()) {
    for (const batch of batcher.flush()) await settle(batch);
  }
  return totals;
}
