import type { ApiContext } from './api-context.js';
import { boundedRowError } from './check-reply.js';
import type { CliIo } from './cli-io.js';
import { FatalError } from './fatal-error.js';
import { readImportErrors } from './import-errors-pages.js';
import { readImport } from './import-resource.js';
import { InputError } from './input-error.js';
import { printable, printableJson } from './printable.js';
import { ReportWriter, type ReportFormat } from './report.js';
import { failureOf } from './settle-batch.js';
import { notFoundText } from './show-import.js';

export interface RebuildOptions {
  importId: string;
  report: { path: string; format: ReportFormat };
  json: boolean;
  maxRetryTimeMs: number;
}

/**
 * `bulk-import imports errors ID --report FILE`: the import's failed rows (every page of GET
 * /v1/api/imports/{id}/errors) written as an import run writes its --report, with the row's
 * `index` in its request for its location. note: each row goes through the same steps as a
 * server's row error in a run (boundedRowError, failureOf, ReportWriter), so the two files are
 * alike line for line. 0 written, 1 not found.
 */
export async function rebuildReport(ctx: ApiContext, options: RebuildOptions, io: CliIo): Promise<number> {
  const now = ctx.now ?? Date.now;
  const { importId } = options;
  const found = await readImport(ctx, importId, now() + options.maxRetryTimeMs);
  if (found === undefined) {
    io.stderr.write(`error: ${printable(notFoundText(importId))}\n`);
    return 1;
  }
  const { state, rows } = found.import;
  const ended = state === 'completed' || state === 'failed' || state === 'cancelled';
  if (!ended) io.stderr.write(`note: ${printable(`import ${importId} is still ${state}: these are its failed rows so far`)}\n`);
  let report: ReportWriter;
  try {
    report = await ReportWriter.open(options.report.path, options.report.format, 'index');
  } catch (error) {
    throw new InputError(`cannot write the report ${options.report.path}: ${(error as Error).message}`);
  }
  let listed: number | 'not-found';
  try {
    listed = await readImportErrors({
      ctx,
      importId,
      deadline: now() + options.maxRetryTimeMs,
      // note: a running import's list may still grow, past what it has received so far.
      ...(ended ? { maxRows: rows.received } : {}),
      onPage: (page) => report.add(page.map((error) => failureOf(error.index, boundedRowError(error)))),
    });
  } catch (error) {
    if (!(error instanceof FatalError)) throw error;
    throw new FatalError(`${error.message}; ${options.report.path} holds only the rows read before`, error.batchState);
  } finally {
    await report.close();
  }
  if (listed === 'not-found') {
    io.stderr.write(`error: ${printable(notFoundText(importId))}\n`);
    return 1;
  }
  const summary = { import_id: importId, state, failed_rows: listed, report: options.report.path };
  io.stdout.write(`${options.json ? printableJson(summary) : printable(`import ${importId}: ${listed} failed row${listed === 1 ? '' : 's'} written to ${options.report.path}`)}\n`);
  return 0;
}
