import { problemReport } from './soak-catalogue-check.js';
import { CATALOGUE_PROBLEMS, type CatalogueFindings, type CatalogueProblem } from './soak-catalogue-findings.js';
import type { CatalogueOp, CatalogueWrite } from './soak-catalogue-log.js';
import type { RequestStats } from './soak-client.js';
import type { SlowUploadStats } from './soak-slow-uploads.js';

type Ends = { sent: number; answered: number; refused: number; unanswered: number };

/** The catalogue's part of the soak's summary. */
export interface CatalogueReport {
  accounts: string[];
  /** every write by `external_id`, those sent while a mirror's file arrived included */
  writes: Record<CatalogueWrite['type'], Ends>;
  /** the writes sent while a mirror's file arrived */
  writes_during_uploads: Ends;
  /** mirrors by `missing` and how their removal ended (`none`: no import kept) */
  mirrors: Record<'archive' | 'delete', Record<string, number>>;
  /** mirrors sent, answered 202, and their removal ended as planned (done or held) */
  mirrors_sent: number;
  mirrors_as_planned: number;
  requests: { by_outcome: Record<string, number>; by_error: Record<string, number>; hang_ups: Record<string, number> };
  uploads: { by_outcome: Record<string, number>; by_error: Record<string, number>; hang_ups: Record<string, number> };
  /** the rows mirrors' imports say they removed, and those the model expected and saw removed */
  rows_removed_by_mirrors: number;
  removals_as_modelled: number;
  kept_by_writes_during_upload: number;
  removed_after_unchanged_resend: number;
  problems: Record<CatalogueProblem, { count: number; first: string[] }>;
  ambiguous_rows: { count: number; by_reason: Record<string, number>; first: string[] };
}

function ends(writes: readonly CatalogueWrite[]): Ends {
  return {
    sent: writes.length,
    answered: writes.filter((w) => w.end === 'answered').length,
    refused: writes.filter((w) => w.end === 'refused').length,
    unanswered: writes.filter((w) => w.end !== 'answered' && w.end !== 'refused').length,
  };
}

export function catalogueReport(input: {
  accounts: string[];
  logs: readonly (readonly CatalogueOp[])[];
  findings: CatalogueFindings;
  requests: RequestStats;
  uploads: SlowUploadStats;
  first: number;
}): CatalogueReport {
  const { findings } = input;
  const ops = input.logs.flat();
  const during = ops.flatMap((op) => (op.type === 'mirror' ? op.race : []));
  const writes = [...ops.filter((op): op is CatalogueWrite => op.type !== 'mirror'), ...during];
  const mirrors: CatalogueReport['mirrors'] = { archive: {}, delete: {} };
  for (const m of findings.mirrors) mirrors[m.missing][m.state] = (mirrors[m.missing][m.state] ?? 0) + 1;
  const byReason: Record<string, number> = {};
  for (const reason of findings.ambiguous.values()) {
    const kind = reason.split(':')[0]!;
    byReason[kind] = (byReason[kind] ?? 0) + 1;
  }
  return {
    accounts: input.accounts,
    writes: Object.fromEntries((['upsert', 'merge', 'archive', 'delete'] as const).map((type) => [type, ends(writes.filter((w) => w.type === type))])) as CatalogueReport['writes'],
    writes_during_uploads: ends(during),
    mirrors,
    mirrors_sent: ops.filter((op) => op.type === 'mirror').length,
    mirrors_as_planned: findings.mirrors.filter((m) => m.state === m.meant).length,
    requests: { by_outcome: input.requests.byOutcome, by_error: input.requests.byError, hang_ups: input.requests.hangUps },
    uploads: { by_outcome: input.uploads.byOutcome, by_error: input.uploads.byError, hang_ups: input.uploads.hangUps },
    rows_removed_by_mirrors: findings.mirrors.filter((m) => m.state === 'done').reduce((sum, m) => sum + m.rows, 0),
    removals_as_modelled: findings.removedByMirrors,
    kept_by_writes_during_upload: findings.keptByWritesDuringUpload.length,
    removed_after_unchanged_resend: findings.removedAfterUnchangedResend,
    problems: problemReport(findings, input.first),
    ambiguous_rows: { count: findings.ambiguous.size, by_reason: byReason, first: [...findings.ambiguous].slice(0, input.first).map(([row, why]) => `${row}: ${why}`) },
  };
}

/**
 * What fails the soak: any problem the check found, a write never answered, and (unless the
 * run was interrupted) a catalogue soak that proved nothing: no mirror of either mode removed a
 * row, none was held, no archive, delete or merge was answered, no row was kept by a write sent
 * during an upload or removed despite an unchanged one.
 */
export function catalogueFailures(report: CatalogueReport, interrupted: boolean): string[] {
  const failures: string[] = [];
  for (const [problem, what] of Object.entries(CATALOGUE_PROBLEMS) as [CatalogueProblem, string][]) {
    const found = report.problems[problem];
    if (found.count > 0) failures.push(`catalogue: ${found.count} ${what}; first: ${found.first.slice(0, 3).join('; ')}`);
  }
  const unanswered = Object.values(report.writes).reduce((sum, e) => sum + e.unanswered, 0);
  if (unanswered > 0 && !interrupted) failures.push(`catalogue: ${unanswered} writes never answered`);
  if (interrupted || report.accounts.length === 0) return failures;
  for (const missing of ['archive', 'delete'] as const) if ((report.mirrors[missing].done ?? 0) === 0) failures.push(`catalogue: no mirror with missing=${missing} removed rows`);
  if ((report.mirrors.archive.held ?? 0) + (report.mirrors.delete.held ?? 0) === 0) failures.push('catalogue: no mirror was held by its guard');
  for (const type of ['merge', 'archive', 'delete'] as const) if (report.writes[type].answered === 0) failures.push(`catalogue: no ${type} was answered`);
  if (report.removals_as_modelled === 0) failures.push('catalogue: no row was removed by a mirror as the model expected');
  if (report.kept_by_writes_during_upload === 0) failures.push('catalogue: no row left out of a mirror was kept by a write sent while its file arrived');
  return failures;
}
