import type { ImportTotals } from './run-import.js';

export type Outcome = { type: 'finished' } | { type: 'stopped'; reason: string };

export interface SummaryInput {
  kind: string;
  file: string;
  dryRun: false | 'local' | 'server';
  location: 'line' | 'index';
  totals: ImportTotals;
  seconds: number;
  outcome: Outcome;
}

/** Exit status: 2 when the run stopped early, else 1 if any row failed, else 0. */
export function exitCodeOf(input: Pick<SummaryInput, 'totals' | 'outcome'>): number {
  if (input.outcome.type === 'stopped') return 2;
  return input.totals.failed > 0 ? 1 : 0;
}

/** The final line on stdout: human text, or one JSON object with `--json`. */
export function formatSummary(input: SummaryInput): { text: string; json: Record<string, unknown>; exitCode: number } {
  const { totals, outcome } = input;
  const seconds = Math.round(input.seconds * 10) / 10;
  const parts = [`${totals.rowsRead} rows read`];
  // note: updated and unchanged only when rows were matched on external_id, as the API answers
  const matched = totals.updated + totals.unchanged > 0;
  if (input.dryRun === 'local') parts.push(`${totals.valid} valid`, `${totals.failed} failed`, 'nothing sent (dry run)');
  else if (input.dryRun === 'server') {
    parts.push(
      `would insert ${totals.inserted}`,
      ...(matched ? [`update ${totals.updated}`, `leave ${totals.unchanged} unchanged`] : []),
      `${totals.failed} failed`,
      `${totals.batches} batches`,
      'nothing written (server dry run)',
    );
  } else {
    parts.push(`${totals.inserted} inserted`, ...(matched ? [`${totals.updated} updated`, `${totals.unchanged} unchanged`] : []), `${totals.failed} failed`, `${totals.batches} batches`);
  }
  parts.push(`${seconds} s`);
  let text = `${input.kind}: ${parts.join(', ')}`;
  if (outcome.type === 'stopped') {
    text +=
      totals.settledThrough === null
        ? '; stopped before any row was settled'
        : `; stopped: every row up to ${input.location} ${totals.settledThrough} is settled, later rows were not sent`;
  }
  const json = {
    kind: input.kind,
    file: input.file,
    dry_run: input.dryRun !== false,
    /** `local`, `server`, or null for an import */
    dry_run_mode: input.dryRun === false ? null : input.dryRun,
    rows_read: totals.rowsRead,
    valid: totals.valid,
    /** in a server dry run: what the import would have inserted, updated and left unchanged */
    inserted: totals.inserted,
    updated: totals.updated,
    unchanged: totals.unchanged,
    failed: totals.failed,
    batches: totals.batches,
    /** batches a retry found already imported (Idempotency-Key replay): counted once */
    replayed_batches: totals.replays,
    seconds,
    completed: outcome.type === 'finished',
    ...(outcome.type === 'stopped' ? { error: outcome.reason, [`settled_through_${input.location}`]: totals.settledThrough } : {}),
  };
  return { text, json, exitCode: exitCodeOf(input) };
}
