import type { Import } from './import-resource.js';
import { removalText } from './mirror-outcome.js';

/**
 * Its rows in words: `200 received, 2 inserted, 37 updated, 158 unchanged, 3 skipped`; an archive's
 * or delete's rows archived or deleted are added (docs/catalogue.md#archive-and-delete).
 */
export function rowCounts(found: Import): string {
  const { received, processed, inserted, updated, unchanged, skipped } = found.rows;
  const removed = [...(found.rows.archived ? [`${found.rows.archived} archived`] : []), ...(found.rows.deleted ? [`${found.rows.deleted} deleted`] : [])];
  // note: while an import runs, what it has done so far; `processed` is all of it once it ended.
  const ended = found.state === 'completed' || found.state === 'failed' || found.state === 'cancelled';
  const progress = ended || processed === received ? [] : [`${processed} processed so far`];
  return [`${received} received`, ...progress, `${inserted} inserted`, `${updated} updated`, `${unchanged} unchanged`, ...removed, `${skipped} skipped`].join(', ');
}

/** `imports show`: a few lines a person reads at a glance. */
export function importSummary(found: Import): string[] {
  const lines = [
    `import ${found.id}: ${found.kind}, ${found.state}${found.state === 'failed' ? ' (nothing was written)' : ''}`,
    `  source    ${found.source === 'request' ? (found.action === 'archive' || found.action === 'delete' ? `a bulk-${found.action} request` : 'a bulk request') : 'a whole file'}`,
    `  created   ${found.created_at}`,
    `  started   ${found.started_at ?? '-'}`,
    `  finished  ${found.finished_at ?? '-'}`,
    `  rows      ${rowCounts(found)}`,
    // note: a mirror's removal (docs/catalogue.md#mirror): a held one is what a partner came to look up
    ...(found.removal ? [`  mirror    ${removalText(found.removal)} (missing=${found.removal.missing}, max_removal=${found.removal.max_removal})`] : []),
  ];
  if (found.error_count > 0) lines.push(`  errors    ${found.error_count} (bulk-import imports errors ${found.id} --report FILE)`);
  return lines;
}

/** `imports list`: one import on one line, its columns aligned for the usual kinds and states. */
export function importLine(found: Import): string {
  return [found.id, found.kind.padEnd(8), found.state.padEnd(9), found.created_at, rowCounts(found)].join('  ');
}
