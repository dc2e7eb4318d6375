import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { readCsvRows } from '../../shared/import/file/read-csv.js';
import { readJsonRows } from '../../shared/import/file/read-json.js';
import { readNdjsonRows } from '../../shared/import/file/read-ndjson.js';
import { rowFields, type FieldSpec } from '../../shared/import/file/row-fields.js';
import { INPUT_FORMATS, type SourceRow } from '../../shared/import/file/source-row.js';
import { IMPORT_KINDS } from '../../shared/import/import-kinds.js';
import { insecureWarning } from './api-target.js';
import { parseCliArgs, USAGE, type CliOptions } from './args.js';
import { checkReadable } from './check-readable.js';
import type { CliIo } from './cli-io.js';
import { USER_AGENT } from './cli-version.js';
import { createApiContext } from './create-api-context.js';
import { countRecords } from './count-records.js';
import { failureEcho } from './failure-echo.js';
import { importsMain } from './imports-main.js';
import { removalMain } from './removal-main.js';
import { catalogueMain } from './catalogue-main.js';
import { InputError } from './input-error.js';
import { createProgress } from './progress.js';
import { openReport } from './open-report.js';
import { emptyTotals, runImport, type ImportTotals } from './run-import.js';
import { parseOrExit } from './parse-or-exit.js';
import { runToEnd, writeStopReason, type RunOpened } from './run-to-end.js';
import { sendBatch, type BatchOutcome } from './send-batch.js';
import { printable, printableJson } from './printable.js';
import { formatSummary, unaccountedAdvice, type SummaryInput } from './summary.js';
import { fileBodyOf } from './file-body.js';
import { runFileImport } from './run-file-import.js';
import { checkMergeRow, checkRow } from './check-row.js';
import type { Import } from './import-resource.js';
import { watchInterrupt } from './watch-interrupt.js';
import { heldNotice, mirrorProblem } from './mirror-outcome.js';
import { MirrorWatch } from './mirror-watch.js';
import { MERGE_RULES } from '../../shared/rows/merge-row.js';

function readRows(options: CliOptions, fields: FieldSpec[], stream: Readable, io: CliIo, noteHeader = true): AsyncIterable<SourceRow> {
  switch (options.format) {
    case 'csv':
      return readCsvRows(stream, {
        fields,
        kind: options.kind,
        onHeader: ({ unknown }) => {
          if (noteHeader && unknown.length > 0) io.stderr.write(`${printable(`note: ignoring columns that are not ${options.kind} fields: ${unknown.join(', ')}`)}\n`);
        },
      });
    case 'ndjson':
      return readNdjsonRows(stream);
    case 'json':
      return readJsonRows(stream);
  }
}

/**
 * The partner CLI: `bulk-import listings|machines FILE`, `bulk-import imports ...` to look up
 * past imports (imports-main.ts), `bulk-import listings|machines archive|delete FILE`
 * (removal-main.ts), or `bulk-import listings|machines list ...` to read the rows back
 * (catalogue-main.ts). Returns the exit status: 0 every row in,
 * 1 some rows failed or are unaccounted for, 2 usage error, unreadable file, authentication
 * failure, unreachable server or a reply that cannot be believed. Progress and notices go to stderr, the one-line summary to stdout.
 */
export async function main(argv: string[], env: NodeJS.ProcessEnv, io: CliIo): Promise<number> {
  if (argv[0] === 'imports') return importsMain(argv.slice(1), env, io, USER_AGENT);
  // note: `archive` or `delete` right after the kind is the command (removal-main.ts); a file so named is given as ./archive.
  if ((argv[0] === 'listings' || argv[0] === 'machines') && (argv[1] === 'archive' || argv[1] === 'delete')) return removalMain(argv[0], argv[1], argv.slice(2), env, io, USER_AGENT);
  // note: so is `list` (catalogue-main.ts); a file named list is given as ./list.
  if ((argv[0] === 'listings' || argv[0] === 'machines') && argv[1] === 'list') return catalogueMain(argv[0], argv.slice(2), env, io, USER_AGENT);
  const opts = parseOrExit(() => parseCliArgs(argv, env), USAGE, io);
  if (typeof opts === 'number') return opts;
  if (opts.insecureHttp) io.stderr.write(`warning: ${printable(insecureWarning({ baseUrl: opts.baseUrl!, baseUrlOrigin: opts.baseUrlOrigin! }))}\n`);
  const startedAt = Date.now();
  const kindSpec = IMPORT_KINDS[opts.kind];
  const fields = rowFields(kindSpec.rowSchema);
  const totals: ImportTotals = emptyTotals();
  let background: SummaryInput['background'] = opts.background ? { importId: null, state: 'not sent' } : undefined;
  const interrupt = watchInterrupt(
    io,
    opts.background
      ? '\ninterrupted: stopping once the upload in flight is answered; an import the server has stays its own (Ctrl-C again to quit at once)\n'
      : '\ninterrupted: finishing the batch in flight (Ctrl-C again to quit at once)\n',
  );

  const opened: RunOpened = {};
  const outcome = await runToEnd(io, interrupt, opened, async () => {
    await checkReadable(opts.file);
    if (opts.report) opened.report = await openReport(opts.report, INPUT_FORMATS[opts.format].location);
    const count = await countRecords(createReadStream(opts.file), opts.format).catch((error: Error) => {
      throw new InputError(`cannot read ${opts.file}: ${error.message}`);
    });
    // note: a truncated file is refused before anything is sent, so a re-run cannot duplicate rows.
    if (count.truncated) throw new InputError(`${opts.file} looks truncated: ${count.truncated}; nothing was sent`);

    const activeProgress = createProgress({ total: count.rows, stream: io.stderr, quiet: opts.quiet });
    opened.progress = activeProgress;
    // note: made only when something is sent, so a local dry run needs no key or base URL.
    const context = () => createApiContext({ baseUrl: opts.baseUrl!, apiKey: opts.apiKey! }, opts, USER_AGENT, (message) => activeProgress.notice(message));
    if (opts.background) {
      const location = INPUT_FORMATS[opts.format].location;
      const sink = opened.report ?? failureEcho(activeProgress, location, 'rows');
      const mirror = opts.mirror ? new MirrorWatch(opts.kind, sink, (message) => activeProgress.notice(message)) : undefined;
      const result = await runFileImport(
        context(),
        {
          kind: opts.kind,
          body: fileBodyOf(opts.file, opts.format),
          options: { update: opts.update, ...(opts.mirror ? { mirror: opts.mirror } : {}) },
          // note: a JSON array is sent one element a line, so its row index is its location already.
          ...(opts.format === 'json' ? {} : { rows: () => readRows(opts, fields, createReadStream(opts.file), io, false) }),
          report: mirror?.sink ?? sink,
          progress: activeProgress,
          shouldStop: interrupt.interrupted,
          onAccepted: (importId) => {
            // note: printed at once, so a partner who leaves can come back to it.
            activeProgress.notice(`import ${importId}: the file is stored; the server writes it now (bulk-import imports show ${importId})`);
            background = { importId, state: 'queued' };
          },
          ...(mirror ? { onRead: (found: Import) => mirror.onRead(found) } : {}),
        },
        totals,
      );
      if (result.importId === null) {
        background = { importId: null, state: 'refused' };
        return { type: 'stopped', reason: result.refused };
      } else {
        background = { importId: result.importId, state: result.state, ...mirror?.outcomeOf(result.last) };
        const notMirror = mirror && result.state === 'completed' ? mirrorProblem(result.last) : undefined;
        if (notMirror !== undefined) {
          return { type: 'stopped', reason: notMirror };
        } else if (result.state === 'watching') {
          return { type: 'stopped', reason: `interrupted: import ${result.importId} goes on without watching; see it with "bulk-import imports show ${result.importId}"` };
        } else if (result.state === 'cancelled') {
          return { type: 'stopped', reason: `import ${result.importId} was cancelled: the rows it wrote before stay written, the rest were not written` };
        } else if (result.state === 'failed') {
          return { type: 'stopped', reason: `import ${result.importId} failed: nothing was written` };
        }
      }
    } else {
      let send: ((body: string, rowCount: number) => Promise<BatchOutcome>) | undefined;
      if (opts.dryRun !== 'local') {
        const batchContext = context();
        send = (body, rowCount) => sendBatch(batchContext, opts.kind, body, rowCount, opts.dryRun === 'server', opts.update);
      }
      const fieldNames = fields.map((f) => f.name);
      await runImport(
        {
          kind: opts.kind,
          check:
            opts.update === 'merge'
              ? (value) => checkMergeRow(MERGE_RULES[opts.kind], fieldNames, value)
              : (value) => checkRow(kindSpec.rowSchema, fieldNames, value),
          limits: { maxRows: kindSpec.maxRows, maxBytes: kindSpec.bodyLimitBytes },
          rows: readRows(opts, fields, createReadStream(opts.file), io),
          ...(send ? { send } : {}),
          report: opened.report ?? failureEcho(activeProgress, INPUT_FORMATS[opts.format].location, 'rows'),
          progress: activeProgress,
          shouldStop: interrupt.interrupted,
        },
        totals,
      );
      if (interrupt.interrupted()) return { type: 'stopped', reason: 'interrupted' };
    }
    return { type: 'finished' };
  });
  if (typeof outcome === 'number') return outcome;
  const seconds = (Date.now() - startedAt) / 1000;
  const summary = formatSummary({
    kind: opts.kind,
    file: opts.file,
    dryRun: opts.dryRun,
    location: INPUT_FORMATS[opts.format].location,
    totals,
    seconds,
    outcome,
    update: opts.update,
    ...(background ? { background } : {}),
  });
  writeStopReason(io, outcome);
  const advice = unaccountedAdvice(totals, opts.dryRun);
  // note: not silenced by --quiet: those rows need the partner's attention before any re-run.
  if (advice !== undefined) io.stderr.write(`note: ${printable(advice)}\n`);
  // note: not silenced by --quiet either: a mirror that did not take effect must be noticed (exit 1).
  if (background?.removal?.state === 'held' && background.importId !== null) {
    io.stderr.write(`note: ${printable(heldNotice(background.importId, background.removal, background.heldBy ?? { by: 'max_removal' }, INPUT_FORMATS[opts.format].location))}\n`);
  }
  io.stdout.write(`${opts.json ? printableJson(summary.json) : printable(summary.text)}\n`);
  return summary.exitCode;
}
