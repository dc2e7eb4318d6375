import { describe, expect, it } from 'vitest';
import type { Batch, RowFailure } from '../../../src/cli/partner/batcher.js';
import { FatalError } from '../../../src/cli/partner/fatal-error.js';
import type { Progress } from '../../../src/cli/partner/progress.js';
import { batchSettler, type SettledTotals } from '../../../src/cli/partner/settle-batch.js';
import type { RowError } from '../../../src/shared/rows/row-errors.js';

/** what a run's answers count, here a single number */
type Written = { written: number; rowErrors: RowError[] };

const batchOf = (locations: number[], failures: RowFailure[] = []): Batch => ({
  rows: locations.map((n) => JSON.stringify({ n })),
  locations,
  failures,
  body: () => '{"listings":[]}',
});

const progressLog = () => {
  const done: number[] = [];
  const progress: Progress = { update: (n) => void done.push(n), notice: () => {}, stop: () => {} };
  return { done, progress };
};

const emptySettled = (): SettledTotals & { written: number } => ({ failed: 0, unaccounted: 0, batches: 0, settledThrough: null, replays: 0, written: 0 });

describe('batchSettler', () => {
  it('adds a written batch to the totals through addCounts and reports its row errors at their file locations', async () => {
    const totals = emptySettled();
    const reported: RowFailure[][] = [];
    const { done, progress } = progressLog();
    const settle = batchSettler<Written>(
      {
        send: async () => ({ type: 'imported', replayed: true, written: 2, rowErrors: [{ index: 1, reason: 'bad', details: [] }] }),
        report: { add: async (failures) => void reported.push([...failures]) },
        progress,
      },
      totals,
      'not done',
      (counts) => {
        totals.written += counts.written;
      },
    );
    await settle(batchOf([3, 5, 9], [{ location: 4, reason: 'local' }]));
    expect(reported).toEqual([[{ location: 4, reason: 'local' }, { location: 5, reason: 'bad', details: [] }]]);
    expect(totals).toEqual({ failed: 2, unaccounted: 0, batches: 1, settledThrough: 9, replays: 1, written: 2 });
    expect(done).toEqual([4]);
  });

  it.each([
    ['not-written', 'not done: stopped', { failed: 2, unaccounted: 0 }],
    ['unknown', 'unaccounted for: stopped', { failed: 0, unaccounted: 2 }],
  ] as const)('settles a batch a %s fatal error stopped before rethrowing it', async (state, reason, counts) => {
    const totals = emptySettled();
    const reported: RowFailure[] = [];
    const fatal = new FatalError('stopped', state);
    const settle = batchSettler<Written>(
      {
        send: async () => {
          throw fatal;
        },
        report: { add: async (failures) => void reported.push(...failures) },
        progress: progressLog().progress,
      },
      totals,
      'not done',
      () => {},
    );
    await expect(settle(batchOf([7, 8]))).rejects.toBe(fatal);
    expect(reported.map((f) => f.reason)).toEqual([reason, reason]);
    expect(totals).toMatchObject({ ...counts, batches: 0, settledThrough: 8 });
  });
});
