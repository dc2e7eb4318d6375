import { createReadStream } from 'node:fs';
import { IMPORT_KINDS } from '../../shared/import/import-kinds.js';
import { MERGE_RULES } from '../../shared/rows/merge-row.js';
import { checkMergeRow, checkRow } from './check-row.js';
import { apiContextOf, type OpenedImport } from './opened-import.js';
import { readFileRows } from './read-file-rows.js';
import { runImport } from './run-import.js';
import type { Outcome } from './run-summary.js';
import { sendBatch, type BatchOutcome } from './send-batch.js';

/**
 * The file's rows checked here and sent in batches (run-import.ts), each answered at once;
 * none sent with --dry-run, each a server dry run with --dry-run=server, merges with --merge.
 */
export async function importInBatches(run: OpenedImport): Promise<Outcome> {
  const { opts, fields } = run;
  const kindSpec = IMPORT_KINDS[opts.kind];
  let send: ((body: string, rowCount: number) => Promise<BatchOutcome>) | undefined;
  if (opts.dryRun !== 'local') {
    const context = apiContextOf(run);
    const returnRows = run.results !== undefined;
    send = (body, rowCount) => sendBatch(context, opts.kind, body, rowCount, opts.dryRun === 'server', opts.update, returnRows);
  }
  const fieldNames = fields.map((f) => f.name);
  await runImport(
    {
      kind: opts.kind,
      check:
        opts.update === 'merge' ? (value) => checkMergeRow(MERGE_RULES[opts.kind], fieldNames, value) : (value) => checkRow(kindSpec.rowSchema, fieldNames, value),
      limits: { maxRows: kindSpec.maxRows, maxBytes: kindSpec.bodyLimitBytes },
      rows: readFileRows(opts, fields, createReadStream(opts.file), run.io),
      ...(send ? { send } : {}),
      report: run.report,
      ...(run.results ? { results: run.results } : {}),
      progress: run.progress,
      shouldStop: run.interrupt.interrupted,
    },
    run.totals,
  );
  return run.interrupt.interrupted() ? { type: 'stopped', reason: 'interrupted' } : { type: 'finished' };
}
