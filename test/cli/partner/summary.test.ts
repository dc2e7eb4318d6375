import { describe, expect, it } from 'vitest';
import { emptyTotals, type ImportTotals } from '../../../src/cli/partner/run-import.js';
import { exitCodeOf, formatSummary, unaccountedAdvice } from '../../../src/cli/partner/summary.js';
import { removalText } from '../../../src/cli/partner/mirror-outcome.js';

const totals = (values: Partial<ImportTotals>): ImportTotals => ({ ...emptyTotals(), ...values });
const finished = { type: 'finished' } as const;

describe('the exit status', () => {
  it.each<[string, number, Partial<ImportTotals>, false | 'local' | 'server']>([
    ['every row inserted', 0, { rowsRead: 5, valid: 5, inserted: 5 }, false],
    ['every row inserted, updated or left unchanged', 0, { rowsRead: 5, valid: 5, inserted: 1, updated: 2, unchanged: 2 }, false],
    ['every row valid in a local dry run', 0, { rowsRead: 5, valid: 5 }, 'local'],
    ['a row failed', 1, { rowsRead: 5, valid: 5, inserted: 4, failed: 1 }, false],
    ['a row unaccounted for', 1, { rowsRead: 5, valid: 5, inserted: 4, unaccounted: 1 }, false],
    ['a row read but in none of the counts', 1, { rowsRead: 5, valid: 5, inserted: 4 }, false],
    ['more rows counted than read', 1, { rowsRead: 5, valid: 5, inserted: 6 }, false],
    ['a local dry run that lost a row', 1, { rowsRead: 5, valid: 4 }, 'local'],
  ])('%s: exit %i', (_name, code, values, dryRun) => {
    expect(exitCodeOf({ totals: totals(values), outcome: finished, dryRun })).toBe(code);
  });

  it.each<[string, 'pending' | 'done' | 'held' | 'skipped', number]>([
    ['done', 'done', 0],
    ['held by the guard', 'held', 1],
  ])('is %s for a mirror whose every row is in and whose removal is %s: exit %i', (_name, state, code) => {
    const background = { importId: 'i-1', state: 'completed', removal: { missing: 'archive' as const, max_removal: 10, state, rows: 3 } };
    expect(exitCodeOf({ totals: totals({ rowsRead: 5, valid: 5, unchanged: 5 }), outcome: finished, dryRun: false, background })).toBe(code);
  });

  it('is 2 when the run stopped, whatever the counts', () => {
    expect(exitCodeOf({ totals: totals({ rowsRead: 5, valid: 5, inserted: 5 }), outcome: { type: 'stopped', reason: 'x' }, dryRun: false })).toBe(2);
  });
});

describe('the summary', () => {
  const input = { kind: 'machines', file: 'm.ndjson', location: 'line' as const, seconds: 1, outcome: finished };

  it('names rows unaccounted for only when there are some, and always in --json', () => {
    const none = formatSummary({ ...input, dryRun: false, totals: totals({ rowsRead: 2, valid: 2, inserted: 2, batches: 1 }) });
    expect(none.text).toBe('machines: 2 rows read, 2 inserted, 0 failed, 1 batches, 1 s');
    expect(none.json).toMatchObject({ unaccounted: 0 });
    const some = formatSummary({ ...input, dryRun: false, totals: totals({ rowsRead: 7, valid: 7, inserted: 2, unaccounted: 5, batches: 1 }) });
    expect(some.text).toBe('machines: 7 rows read, 2 inserted, 0 failed, 5 unaccounted for, 1 batches, 1 s');
    expect(some.json).toMatchObject({ unaccounted: 5 });
  });

  it('shows a mirror\'s removal after its import, and with --json as the import reads it, with why a held one was held', () => {
    const removal = { missing: 'delete' as const, max_removal: 10, state: 'held' as const, rows: 40 };
    const summary = formatSummary({
      ...input,
      dryRun: false,
      update: 'merge',
      totals: totals({ rowsRead: 2, valid: 2, updated: 2, batches: 1 }),
      background: { importId: 'i-1', state: 'completed', removal, heldBy: { by: 'unreadable_line', location: 7 } },
    });
    expect(summary.text).toBe('machines: 2 rows read, 0 inserted, 2 updated, 0 unchanged, 0 failed, import i-1 completed, removal held: 40 would have been deleted, nothing removed, 1 s');
    expect(summary.json).toMatchObject({ update: 'merge', import_id: 'i-1', removal: { ...removal, held_by: 'unreadable_line', unreadable_at: 7 } });
    expect(summary.exitCode).toBe(1);
  });

  it('advises checking unaccounted rows before a re-run, which Idempotency-Keys cannot make safe', () => {
    expect(unaccountedAdvice(totals({}), false)).toBeUndefined();
    expect(unaccountedAdvice(totals({ unaccounted: 1 }), false)).toMatch(/^1 row is unaccounted for .*Check them in your account before sending them again: a new run sends them with new Idempotency-Keys/);
    expect(unaccountedAdvice(totals({ unaccounted: 3 }), 'server')).toBe("3 rows are unaccounted for: the server's answer about them could not be checked; nothing was written (server dry run)");
  });
});

describe('a mirror\'s removal in words', () => {
  it.each<['archive' | 'delete', 'pending' | 'done' | 'held' | 'skipped', number, string]>([
    ['archive', 'pending', 0, 'removal pending'],
    ['archive', 'done', 3, 'removal done: 3 archived'],
    ['delete', 'done', 2, 'removal done: 2 deleted'],
    ['archive', 'held', 40, 'removal held: 40 would have been archived, nothing removed'],
    ['delete', 'skipped', 0, 'removal skipped: nothing removed'],
  ])('%s, %s, %i rows: %s', (missing, state, rows, text) => {
    expect(removalText({ missing, max_removal: 10, state, rows })).toBe(text);
  });
});
