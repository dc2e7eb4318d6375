import { createReadStream } from 'node:fs';
import { rowFields } from '../../shared/import/file/row-fields.js';
import { INPUT_FORMATS } from '../../shared/import/file/source-row.js';
import { IMPORT_KINDS } from '../../shared/import/import-kinds.js';
import { parseCliArgs, USAGE, type CliOptions } from './args.js';
import { checkReadable } from './check-readable.js';
import type { CliIo } from './cli-io.js';
import type { Command } from './command.js';
import { countRecords } from './count-records.js';
import { failureEcho } from './failure-echo.js';
import { importInBackground, type BackgroundSummary } from './import-in-background.js';
import { importInBatches } from './import-in-batches.js';
import { InputError } from './input-error.js';
import { heldNotice } from './mirror-outcome.js';
import { openReport } from './open-report.js';
import { ResultsWriter } from './results.js';
import type { OpenedImport } from './opened-import.js';
import { printable, printableJson } from './printable.js';
import { createProgress } from './progress.js';
import { emptyTotals } from './run-import.js';
import { runToEnd, writeStopReason, type RunOpened } from './run-to-end.js';
import { formatSummary, unaccountedAdvice } from './summary.js';
import { watchInterrupt } from './watch-interrupt.js';

const INTERRUPTED = {
  batches: '\ninterrupted: finishing the batch in flight (Ctrl-C again to quit at once)\n',
  background: '\ninterrupted: stopping once the upload in flight is answered; an import the server has stays its own (Ctrl-C again to quit at once)\n',
};

/**
 * Checks the file, opens the report and counts the rows (the progress bar's total). note: a
 * truncated file is refused before anything is sent, so a re-run cannot duplicate rows.
 */
async function openImport(opts: CliOptions, io: CliIo, opened: RunOpened): Promise<OpenedImport['progress']> {
  await checkReadable(opts.file);
  if (opts.report) opened.report = await openReport(opts.report, INPUT_FORMATS[opts.format].location);
  if (opts.results) opened.results = await ResultsWriter.open(opts.results, INPUT_FORMATS[opts.format].location);
  const count = await countRecords(createReadStream(opts.file), opts.format).catch((error: Error) => {
    throw new InputError(`cannot read ${opts.file}: ${error.message}`);
  });
  if (count.truncated) throw new InputError(`${opts.file} looks truncated: ${count.truncated}; nothing was sent`);
  opened.progress = createProgress({ total: count.rows, stream: io.stderr, quiet: opts.quiet });
  return opened.progress;
}

/**
 * `bulk-import listings|machines FILE`: in batches (import-in-batches.ts) or, with --background, as
 * one file import (import-in-background.ts). Exit status: 0 every row in, 1 some rows failed or
 * are unaccounted for, 2 usage error, unreadable file, authentication failure, unreachable server
 * or a reply that cannot be believed. Progress and notices go to stderr, the one-line summary to
 * stdout.
 */
async function importFile(opts: CliOptions, io: CliIo): Promise<number> {
  const startedAt = Date.now();
  const { location } = INPUT_FORMATS[opts.format];
  const totals = emptyTotals();
  const background: BackgroundSummary | undefined = opts.background ? { current: { importId: null, state: 'not sent' } } : undefined;
  const interrupt = watchInterrupt(io, opts.background ? INTERRUPTED.background : INTERRUPTED.batches);
  const opened: RunOpened = {};
  const outcome = await runToEnd(io, interrupt, opened, async () => {
    const progress = await openImport(opts, io, opened);
    const fields = rowFields(IMPORT_KINDS[opts.kind].rowSchema);
    const run: OpenedImport = {
      opts,
      io,
      fields,
      progress,
      report: opened.report ?? failureEcho(progress, location, 'rows'),
      ...(opened.results ? { results: opened.results } : {}),
      interrupt,
      totals,
    };
    return background ? importInBackground(run, background) : importInBatches(run);
  });
  if (typeof outcome === 'number') return outcome;
  const ended = background?.current;
  const seconds = (Date.now() - startedAt) / 1000;
  const summary = formatSummary({ kind: opts.kind, file: opts.file, dryRun: opts.dryRun, location, totals, seconds, outcome, update: opts.update, ...(ended ? { background: ended } : {}) });
  writeStopReason(io, outcome);
  const advice = unaccountedAdvice(totals, opts.dryRun);
  // note: not silenced by --quiet: those rows need the partner's attention before any re-run.
  if (advice !== undefined) io.stderr.write(`note: ${printable(advice)}\n`);
  // note: the rows of a batch settled by watching its import (answered 504) are written, but no answer named their ids
  const missing = opened.results?.missing ?? 0;
  if (missing > 0) io.stderr.write(`note: ${missing} written rows are not in ${printable(opts.file)}'s results: their batches were answered by watching their imports, not with their rows; read them back with bulk-import ${opts.kind} list\n`);
  // note: not silenced by --quiet either: a mirror that did not take effect must be noticed (exit 1).
  if (ended?.removal?.state === 'held' && ended.importId !== null) {
    io.stderr.write(`note: ${printable(heldNotice(ended.importId, ended.removal, ended.heldBy ?? { by: 'max_removal' }, location))}\n`);
  }
  io.stdout.write(`${opts.json ? printableJson(summary.json) : printable(summary.text)}\n`);
  return summary.exitCode;
}

export const importCommand: Command<CliOptions> = { usage: USAGE, parse: parseCliArgs, run: importFile };
