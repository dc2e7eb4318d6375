import { createReadStream } from 'node:fs';
import { fileBodyOf } from './file-body.js';
import type { Import } from './import-resource.js';
import { mirrorProblem } from './mirror-outcome.js';
import { MirrorWatch } from './mirror-watch.js';
import { apiContextOf, type OpenedImport } from './opened-import.js';
import { readFileRows } from './read-file-rows.js';
import { runFileImport } from './run-file-import.js';
import type { Outcome } from './run-summary.js';
import type { SummaryInput } from './summary.js';

/** What the summary says of a --background run (its import, its state, a mirror's removal), kept up to date as the run goes. */
export type BackgroundSummary = { current: NonNullable<SummaryInput['background']> };

/**
 * --background: the whole file as one file import, written by the server and watched to its end
 * (run-file-import.ts). `summary` follows it as it goes, so that a run stopped midway (Ctrl-C, a
 * FatalError) still names its import. Stopped when the import is not one every row is in.
 */
export async function importInBackground(run: OpenedImport, summary: BackgroundSummary): Promise<Outcome> {
  const { opts, progress } = run;
  const mirror = opts.mirror ? new MirrorWatch(opts.kind, run.report, (message) => progress.notice(message)) : undefined;
  const result = await runFileImport(
    apiContextOf(run),
    {
      kind: opts.kind,
      body: fileBodyOf(opts.file, opts.format),
      options: { update: opts.update, ...(opts.mirror ? { mirror: opts.mirror } : {}) },
      // note: a JSON array is sent one element a line, so its row index is its location already.
      ...(opts.format === 'json' ? {} : { rows: () => readFileRows(opts, run.fields, createReadStream(opts.file), run.io, false) }),
      report: mirror?.sink ?? run.report,
      progress,
      shouldStop: run.interrupt.interrupted,
      onAccepted: (importId) => {
        // note: printed at once, so a partner who leaves can come back to it.
        progress.notice(`import ${importId}: the file is stored; the server writes it now (bulk-import imports show ${importId})`);
        summary.current = { importId, state: 'queued' };
      },
      ...(mirror ? { onRead: (found: Import) => mirror.onRead(found) } : {}),
    },
    run.totals,
  );
  if (result.importId === null) {
    summary.current = { importId: null, state: 'refused' };
    return { type: 'stopped', reason: result.refused };
  }
  summary.current = { importId: result.importId, state: result.state, ...mirror?.outcomeOf(result.last) };
  const notMirror = mirror && result.state === 'completed' ? mirrorProblem(result.last) : undefined;
  if (notMirror !== undefined) return { type: 'stopped', reason: notMirror };
  switch (result.state) {
    case 'watching':
      return { type: 'stopped', reason: `interrupted: import ${result.importId} goes on without watching; see it with "bulk-import imports show ${result.importId}"` };
    case 'cancelled':
      return { type: 'stopped', reason: `import ${result.importId} was cancelled: the rows it wrote before stay written, the rest were not written` };
    case 'failed':
      return { type: 'stopped', reason: `import ${result.importId} failed: nothing was written` };
    default:
      return { type: 'finished' };
  }
}
