import type { RowRemovalAction } from '../../shared/import/row-removal-job.js';
import type { RemovalTotals } from './run-removal.js';
import { dryRunJson, runCountsJson, runExitCode, stoppedText, summarySeconds, unaccountedPart, type Outcome } from './run-summary.js';
import type { DryRunMode } from './sending-options.js';

export interface RemovalSummaryInput {
  kind: string;
  action: RowRemovalAction;
  file: string;
  dryRun: DryRunMode;
  totals: RemovalTotals;
  seconds: number;
  outcome: Outcome;
}

/** Entries whose fate is known: done (valid, in a local dry run) or failed. */
function accountedFor({ totals, dryRun }: Pick<RemovalSummaryInput, 'totals' | 'dryRun'>): number {
  return dryRun === 'local' ? totals.valid + totals.failed : totals.archived + totals.unchanged + totals.deleted + totals.failed;
}

/** Exit status as for every run (runExitCode): 2 stopped early, 1 any entry failed or unaccounted for, else 0. */
export function removalExitCode(input: Pick<RemovalSummaryInput, 'totals' | 'outcome' | 'dryRun'>): number {
  return runExitCode({ outcome: input.outcome, counts: input.totals, accounted: accountedFor(input), read: input.totals.entriesRead });
}

/** What to do about entries the CLI cannot account for, or undefined when there are none. */
export function removalUnaccountedAdvice(action: RowRemovalAction, totals: RemovalTotals): string | undefined {
  const n = totals.unaccounted;
  if (n === 0) return undefined;
  const entries = n === 1 ? '1 entry is' : `${n} entries are`;
  return action === 'archive'
    ? `${entries} unaccounted for ("unaccounted for" in the report): the server may have archived their rows. Archiving them again is harmless (a row archived already counts as such)`
    : `${entries} unaccounted for ("unaccounted for" in the report): the server may have deleted their rows. Sent again, a row deleted meanwhile fails as naming no row`;
}

/** The final line on stdout: human text, or one JSON object with `--json`. */
export function formatRemovalSummary(input: RemovalSummaryInput): { text: string; json: Record<string, unknown>; exitCode: number } {
  const { totals, outcome, action } = input;
  const seconds = summarySeconds(input.seconds);
  const parts = [`${totals.entriesRead} entries read`];
  const unaccounted = unaccountedPart(totals);
  const done = action === 'archive' ? [`${totals.archived} archived`, `${totals.unchanged} already archived`] : [`${totals.deleted} deleted`];
  if (input.dryRun === 'local') parts.push(`${totals.valid} valid`, `${totals.failed} failed`, 'nothing sent (dry run)');
  else if (input.dryRun === 'server') parts.push(...done.map((d) => `would be ${d}`), `${totals.failed} failed`, ...unaccounted, `${totals.batches} batches`, 'nothing changed (server dry run)');
  else parts.push(...done, `${totals.failed} failed`, ...unaccounted, `${totals.batches} batches`);
  parts.push(`${seconds} s`);
  let text = `${input.kind} ${action}: ${parts.join(', ')}`;
  if (outcome.type === 'stopped') text += stoppedText(totals, 'entry', 'entries', 'line');
  const json = {
    kind: input.kind,
    action,
    file: input.file,
    ...dryRunJson(input.dryRun),
    entries_read: totals.entriesRead,
    valid: totals.valid,
    ...(action === 'archive' ? { archived: totals.archived, unchanged: totals.unchanged } : { deleted: totals.deleted }),
    ...runCountsJson(totals, seconds, outcome),
    ...(outcome.type === 'stopped' ? { error: outcome.reason, settled_through_line: totals.settledThrough } : {}),
  };
  return { text, json, exitCode: removalExitCode(input) };
}
