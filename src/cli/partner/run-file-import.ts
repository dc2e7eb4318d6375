import type { SourceRow } from '../../shared/import/file/source-row.js';
import type { RowError } from '../../shared/rows/row-errors.js';
import type { FileBody } from './file-body.js';
import { fileLocations } from './file-locations.js';
import type { FileImportOptions } from './import-options.js';
import { FatalError } from './fatal-error.js';
import { readImportErrors } from './import-errors-pages.js';
import { readImport, type Import } from './import-resource.js';
import type { Progress } from './progress.js';
import type { ImportTotals } from './run-import.js';
import { failureOf, type FailureSink } from './settle-batch.js';
import { boundedRowError } from './check-reply.js';
import { sendFile, type FileSendContext } from './send-file.js';

/**
 * The wait between reads of the import while it is written, from the first to the longest.
 * note: each read counts against the account's minute quota: at most 12 a minute, a few percent
 * of the smallest tier's 300.
 */
const POLL_FIRST_MS = 1_000;
const POLL_MAX_MS = 5_000;

const ENDED = new Set(['completed', 'failed', 'cancelled']);

export interface FileImportRun {
  kind: string;
  body: FileBody;
  /** `update=merge` and a mirror's query (--merge, --mirror) */
  options?: FileImportOptions;
  /** the file's rows as the server's reader reads them, for the report's lines; undefined: report `index` (a JSON array, sent one element a line) */
  rows?: () => AsyncIterable<SourceRow>;
  report: FailureSink;
  progress: Progress;
  /** checked between reads (Ctrl-C): stop watching, the import goes on */
  shouldStop(): boolean;
  /** the import's id, as soon as the server names it */
  onAccepted(importId: string): void;
  /** the import as the server answered it, then as each read finds it (a mirror's removal) */
  onRead?(found: Import): void;
}

/** How the run ended: the import's last state, or a refusal that kept nothing (`importId` null). */
export type FileRunResult =
  /** `last`: the import as last read */
  | { importId: string; state: Import['state'] | 'watching'; last: Import }
  | { importId: null; refused: string };

/** The import's counts as the summary's totals: rows read are the rows the server received. */
function countInto(totals: ImportTotals, found: Import): void {
  const { received, inserted, updated, unchanged, skipped } = found.rows;
  Object.assign(totals, { rowsRead: received, valid: received - skipped, inserted, updated, unchanged, failed: skipped });
}

/**
 * `--background`: the whole file in one request (POST /v1/api/imports), then its import read
 * (GET /v1/api/imports/{id}) every few seconds, the bar showing `rows.processed` of
 * `rows.received`, until it ends; then its failed rows (GET .../errors) go to the report, each at
 * its line in the file when `rows` is given. Throws FatalError (send-file.ts, read-api.ts).
 */
export async function runFileImport(ctx: FileSendContext, run: FileImportRun, totals: ImportTotals): Promise<FileRunResult> {
  const now = ctx.now ?? Date.now;
  const sent = await sendFile(ctx, run.kind, run.body, run.options);
  if (sent.type === 'refused') {
    // note: `no valid rows` lists the first failed rows; nothing of the file was kept.
    if (sent.rowErrors) await writeFailures(run, sent.rowErrors);
    totals.failed = sent.rowErrors?.length ?? 0;
    return { importId: null, refused: `the server refused the file: ${sent.reason}; nothing of it was kept` };
  }
  let found = sent.import;
  run.onAccepted(found.id);
  if (sent.replayed) ctx.notice(`import ${found.id}: this file was sent before with the same Idempotency-Key; watching that import`);
  totals.batches = 1;
  countInto(totals, found);
  run.progress.update(found.rows.processed);
  run.onRead?.(found);
  let delay = POLL_FIRST_MS;
  while (!ENDED.has(found.state)) {
    if (run.shouldStop()) return { importId: found.id, state: 'watching', last: found };
    await ctx.sleep(delay);
    delay = Math.min(delay * 2, POLL_MAX_MS);
    if (run.shouldStop()) return { importId: found.id, state: 'watching', last: found };
    const read = await readImport(ctx, found.id, now() + ctx.policy.maxRetryTimeMs);
    if (read === undefined) throw new FatalError(`import ${found.id} reads 404: it is not an import of this account (unknown, another account's, or past its retention)`, 'unknown');
    found = read.import;
    countInto(totals, found);
    run.progress.update(found.rows.processed);
    run.onRead?.(found);
  }
  if (found.rows.skipped > 0) await reportFailedRows(ctx, run, found);
  return { importId: found.id, state: found.state, last: found };
}

/** Failed rows the server named in a refusal, at their locations in the file. */
async function writeFailures(run: FileImportRun, errors: readonly RowError[]): Promise<void> {
  const locations = run.rows ? fileLocations(run.rows()) : undefined;
  try {
    const failures = [];
    for (const error of errors) failures.push(failureOf(locations ? await locations.locate(error.index) : error.index, error));
    await run.report.add(failures);
  } finally {
    await locations?.close();
  }
}

/** Every page of the import's failed rows, to the report as each page arrives. */
async function reportFailedRows(ctx: FileSendContext, run: FileImportRun, found: Import): Promise<void> {
  const now = ctx.now ?? Date.now;
  const locations = run.rows ? fileLocations(run.rows()) : undefined;
  try {
    const listed = await readImportErrors({
      ctx,
      importId: found.id,
      deadline: now() + ctx.policy.maxRetryTimeMs,
      maxRows: found.rows.received,
      onPage: async (page) => {
        const failures = [];
        for (const error of page) failures.push(failureOf(locations ? await locations.locate(error.index) : error.index, boundedRowError(error)));
        await run.report.add(failures);
      },
    });
    if (listed === 'not-found') throw new FatalError(`the failed rows of import ${found.id} read 404`, 'unknown');
  } finally {
    await locations?.close();
  }
}
