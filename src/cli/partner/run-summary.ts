import type { DryRunMode } from './sending-options.js';

export type Outcome = { type: 'finished' } | { type: 'stopped'; reason: string };

/** What every run counts alike, whether it sends rows (an import) or entries (an archive or delete). */
export interface RunCounts {
  failed: number;
  /** whose outcome is unknown: the server may have written them */
  unaccounted: number;
  batches: number;
  /** batches a retry found done already (Idempotency-Key replay) */
  replays: number;
  /** the last line (or index) up to which everything is settled; null before the first */
  settledThrough: number | null;
}

/**
 * Exit status: 2 when the run stopped early, else 1 if anything failed or is unaccounted for, or
 * `held` (a mirror whose removal did not take effect), else 0. note: 0 also needs every one read
 * to be `accounted` for, so that no slip in the counting can ever pass for a complete run.
 */
export function runExitCode(run: { outcome: Outcome; counts: RunCounts; accounted: number; read: number; held?: boolean }): number {
  if (run.outcome.type === 'stopped') return 2;
  if (run.counts.failed > 0 || run.counts.unaccounted > 0 || run.held === true) return 1;
  return run.accounted === run.read ? 0 : 1;
}

/** The seconds a summary shows: one decimal. */
export const summarySeconds = (seconds: number) => Math.round(seconds * 10) / 10;

/** `N unaccounted for` for the text summary, only when there are some, so that a run without any reads as before. */
export const unaccountedPart = (counts: RunCounts) => (counts.unaccounted > 0 ? [`${counts.unaccounted} unaccounted for`] : []);

/**
 * How far a stopped run of batches got, for the end of its text summary: `noun` (`row`) and
 * `nouns` (`rows`) are what it sends, `location` (`line`, `index`) where they are in the file.
 */
export function stoppedText(counts: RunCounts, noun: string, nouns: string, location: string): string {
  return counts.settledThrough === null
    ? `; stopped before any ${noun} was settled`
    : `; stopped: every ${noun} up to ${location} ${counts.settledThrough} is settled, later ${nouns} were not sent`;
}

/** `dry_run` and `dry_run_mode` of a --json summary (`local`, `server`, or null for a run that writes). */
export function dryRunJson(dryRun: DryRunMode): { dry_run: boolean; dry_run_mode: 'local' | 'server' | null } {
  return { dry_run: dryRun !== false, dry_run_mode: dryRun === false ? null : dryRun };
}

/** The counts every --json summary ends with, in this order. */
export function runCountsJson(counts: RunCounts, seconds: number, outcome: Outcome) {
  return {
    failed: counts.failed,
    /** whose outcome is unknown (each in the report): the server may have written them */
    unaccounted: counts.unaccounted,
    batches: counts.batches,
    /** batches a retry found already done (Idempotency-Key replay): counted once */
    replayed_batches: counts.replays,
    seconds,
    completed: outcome.type === 'finished',
  };
}
