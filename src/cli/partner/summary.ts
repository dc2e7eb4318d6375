import type { UpdateMode } from './import-options.js';
import { removalText, type HeldBy, type MirrorRemoval } from './mirror-outcome.js';
import type { ImportTotals } from './run-import.js';
import { dryRunJson, runCountsJson, runExitCode, stoppedText, summarySeconds, unaccountedPart, type Outcome } from './run-summary.js';
import type { DryRunMode } from './sending-options.js';

export type { Outcome } from './run-summary.js';

export interface SummaryInput {
  kind: string;
  file: string;
  dryRun: DryRunMode;
  location: 'line' | 'index';
  totals: ImportTotals;
  seconds: number;
  outcome: Outcome;
  /** `merge` with --merge; `replace` when absent */
  update?: UpdateMode;
  /**
   * `--background`: the file's import (null until the server named one) and its last state:
   * `refused` (a 4xx kept nothing), `not sent`, or the import's; with --mirror, its removal as
   * last read, and why a held one was held
   */
  background?: { importId: string | null; state: string; removal?: MirrorRemoval; heldBy?: HeldBy };
}

/** Rows whose fate is known: imported, updated or unchanged (valid, in a local dry run), or failed. */
function accountedFor(totals: ImportTotals, dryRun: SummaryInput['dryRun']): number {
  return dryRun === 'local' ? totals.valid + totals.failed : totals.inserted + totals.updated + totals.unchanged + totals.failed;
}

/**
 * Exit status, as for every run (runExitCode): 2 stopped early, 1 any row failed or is unaccounted
 * for, or a mirror's removal was held, else 0. note: a held mirror wrote its rows but did not take
 * effect, which a nightly job must notice.
 */
export function exitCodeOf(input: Pick<SummaryInput, 'totals' | 'outcome' | 'dryRun' | 'background'>): number {
  const { totals } = input;
  const held = input.background?.removal?.state === 'held';
  return runExitCode({ outcome: input.outcome, counts: totals, accounted: accountedFor(totals, input.dryRun), read: totals.rowsRead, held });
}

/**
 * What to do about rows the CLI cannot account for, or undefined when there are none. note: a new
 * run sends every batch with a new Idempotency-Key, so it cannot be told apart from a first send.
 */
export function unaccountedAdvice(totals: ImportTotals, dryRun: SummaryInput['dryRun']): string | undefined {
  const n = totals.unaccounted;
  if (n === 0) return undefined;
  const rows = n === 1 ? '1 row is' : `${n} rows are`;
  if (dryRun === 'server') return `${rows} unaccounted for: the server's answer about them could not be checked; nothing was written (server dry run)`;
  return (
    `${rows} unaccounted for ("unaccounted for" in the report): the server may have written some or all of them. ` +
    'Check them in your account before sending them again: a new run sends them with new Idempotency-Keys, ' +
    'so rows without an external_id may be added a second time (rows with one are matched on it and updated instead)'
  );
}

/** The final line on stdout: human text, or one JSON object with `--json`. */
export function formatSummary(input: SummaryInput): { text: string; json: Record<string, unknown>; exitCode: number } {
  const { totals, outcome } = input;
  const seconds = summarySeconds(input.seconds);
  const parts = [`${totals.rowsRead} rows read`];
  // note: updated and unchanged only when rows were matched on external_id, as the API answers
  const matched = totals.updated + totals.unchanged > 0;
  const unaccounted = unaccountedPart(totals);
  if (input.dryRun === 'local') parts.push(`${totals.valid} valid`, `${totals.failed} failed`, 'nothing sent (dry run)');
  else if (input.dryRun === 'server') {
    parts.push(
      `would insert ${totals.inserted}`,
      ...(matched ? [`update ${totals.updated}`, `leave ${totals.unchanged} unchanged`] : []),
      `${totals.failed} failed`,
      ...unaccounted,
      `${totals.batches} batches`,
      'nothing written (server dry run)',
    );
  } else {
    const { background } = input;
    parts.push(
      `${totals.inserted} inserted`,
      ...(matched ? [`${totals.updated} updated`, `${totals.unchanged} unchanged`] : []),
      `${totals.failed} failed`,
      ...unaccounted,
      background === undefined ? `${totals.batches} batches` : background.importId === null ? 'no import' : `import ${background.importId} ${background.state}`,
      ...(background?.removal ? [removalText(background.removal)] : []),
    );
  }
  parts.push(`${seconds} s`);
  let text = `${input.kind}: ${parts.join(', ')}`;
  if (outcome.type === 'stopped' && input.background) {
    // note: a file import's rows are settled by the server, not in file order: the counts say how far it got.
    text += input.background.state === 'refused' ? '; stopped: nothing of the file was kept' : '; stopped';
  } else if (outcome.type === 'stopped') {
    text += stoppedText(totals, 'row', 'rows', input.location);
  }
  const json = {
    kind: input.kind,
    file: input.file,
    ...dryRunJson(input.dryRun),
    rows_read: totals.rowsRead,
    valid: totals.valid,
    /** in a server dry run: what the import would have inserted, updated and left unchanged */
    inserted: totals.inserted,
    updated: totals.updated,
    unchanged: totals.unchanged,
    ...runCountsJson(totals, seconds, outcome),
    /** `merge` (--merge) or `replace` */
    update: input.update ?? 'replace',
    ...(input.background
      ? {
          import_id: input.background.importId,
          import_state: input.background.importId === null ? null : input.background.state,
          /** a mirror's removal as the import last read ({missing, max_removal, state, rows}, and `held_by` when held); null for any other run */
          removal: removalJson(input.background),
        }
      : {}),
    ...(outcome.type === 'stopped'
      ? { error: outcome.reason, ...(input.background ? {} : { [`settled_through_${input.location}`]: totals.settledThrough }) }
      : {}),
  };
  return { text, json, exitCode: exitCodeOf(input) };
}

/** `removal` of the --json summary. */
function removalJson(background: NonNullable<SummaryInput['background']>): Record<string, unknown> | null {
  const { removal, heldBy } = background;
  if (!removal) return null;
  return { ...removal, ...(removal.state === 'held' && heldBy ? { held_by: heldBy.by, ...(heldBy.by === 'unreadable_line' ? { unreadable_at: heldBy.location } : {}) } : {}) };
}
