import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { FileReadError } from '../../shared/import/file/file-read-error.js';
import { readCsvRows } from '../../shared/import/file/read-csv.js';
import { readJsonRows } from '../../shared/import/file/read-json.js';
import { readNdjsonRows } from '../../shared/import/file/read-ndjson.js';
import { rowFields, type FieldSpec } from '../../shared/import/file/row-fields.js';
import { INPUT_FORMATS, type SourceRow } from '../../shared/import/file/source-row.js';
import { IMPORT_KINDS } from '../../shared/import/import-kinds.js';
import { ApiClient } from './api-client.js';
import { insecureWarning } from './api-target.js';
import { parseCliArgs, USAGE, UsageError, type CliOptions } from './args.js';
import type { CliIo } from './cli-io.js';
import { USER_AGENT, VERSION_LINE } from './cli-version.js';
import { countRecords } from './count-records.js';
import { importsMain } from './imports-main.js';
import { removalMain } from './removal-main.js';
import { catalogueMain } from './catalogue-main.js';
import { InputError } from './input-error.js';
import { createProgress, type Progress } from './progress.js';
import { RateLimitPacer } from './rate-limit.js';
import { ReportWriter } from './report.js';
import { emptyTotals, runImport, type FailureSink, type ImportTotals } from './run-import.js';
import { DEFAULT_RETRY_POLICY, FatalError, sendBatch, type BatchOutcome, type SendContext } from './send-batch.js';
import { printable, printableJson } from './printable.js';
import { formatSummary, unaccountedAdvice, type Outcome, type SummaryInput } from './summary.js';
import { fileBodyOf } from './file-body.js';
import { runFileImport } from './run-file-import.js';
import { checkMergeRow, checkRow } from './check-row.js';
import type { Import } from './import-resource.js';
import { heldNotice, mirrorProblem } from './mirror-outcome.js';
import { MirrorWatch } from './mirror-watch.js';
import { MERGE_RULES } from '../../shared/rows/merge-row.js';
import type { FileSendContext } from './send-file.js';

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

const FAILURES_SHOWN_WITHOUT_REPORT = 10;

/** Without --report, the first failures are shown on stderr so a run is never silent about them. */
function failureEcho(progress: Progress, location: 'line' | 'index'): FailureSink {
  let shown = 0;
  return {
    async add(failures) {
      for (const failure of failures) {
        shown += 1;
        if (shown <= FAILURES_SHOWN_WITHOUT_REPORT) progress.notice(`${location} ${failure.location}: ${failure.reason}`);
        else if (shown === FAILURES_SHOWN_WITHOUT_REPORT + 1) progress.notice('more rows failed; --report FILE lists them all');
      }
    },
  };
}

async function checkReadable(file: string): Promise<void> {
  try {
    const info = await stat(file);
    if (!info.isFile()) throw new Error('not a regular file');
  } catch (error) {
    throw new InputError(`cannot read ${file}: ${(error as Error).message}`);
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
  let options: CliOptions | 'help' | 'version';
  try {
    options = parseCliArgs(argv, env);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.stderr.write(`error: ${printable(error.message)}\n\n${USAGE}\n`);
    return 2;
  }
  if (options === 'help') {
    io.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (options === 'version') {
    io.stdout.write(`${VERSION_LINE}\n`);
    return 0;
  }

  const opts = options;
  if (opts.insecureHttp) io.stderr.write(`warning: ${printable(insecureWarning({ baseUrl: opts.baseUrl!, baseUrlOrigin: opts.baseUrlOrigin! }))}\n`);
  const startedAt = Date.now();
  const kindSpec = IMPORT_KINDS[opts.kind];
  const fields = rowFields(kindSpec.rowSchema);
  const totals: ImportTotals = emptyTotals();
  let report: ReportWriter | undefined;
  let progress: Progress | undefined;
  let outcome: Outcome = { type: 'finished' };
  let interrupted = false;
  let started = false;
  let background: SummaryInput['background'] = opts.background ? { importId: null, state: 'not sent' } : undefined;
  const onInterrupt = () => {
    // note: a first Ctrl-C lets the batch in flight finish, so its outcome is known and reported.
    if (interrupted) process.exit(2);
    interrupted = true;
    io.stderr.write(
      opts.background
        ? '\ninterrupted: stopping once the upload in flight is answered; an import the server has stays its own (Ctrl-C again to quit at once)\n'
        : '\ninterrupted: finishing the batch in flight (Ctrl-C again to quit at once)\n',
    );
  };
  process.on('SIGINT', onInterrupt);

  try {
    await checkReadable(opts.file);
    if (opts.report) {
      try {
        report = await ReportWriter.open(opts.report.path, opts.report.format, INPUT_FORMATS[opts.format].location);
      } catch (error) {
        throw new InputError(`cannot write the report ${opts.report.path}: ${(error as Error).message}`);
      }
    }
    const count = await countRecords(createReadStream(opts.file), opts.format).catch((error: Error) => {
      throw new InputError(`cannot read ${opts.file}: ${error.message}`);
    });
    // note: a truncated file is refused before anything is sent, so a re-run cannot duplicate rows.
    if (count.truncated) throw new InputError(`${opts.file} looks truncated: ${count.truncated}; nothing was sent`);

    const activeProgress = createProgress({ total: count.rows, stream: io.stderr, quiet: opts.quiet });
    progress = activeProgress;
    started = true;
    const context = (): SendContext & FileSendContext => ({
      client: new ApiClient({ baseUrl: opts.baseUrl!, apiKey: opts.apiKey!, timeoutMs: opts.timeoutMs, userAgent: USER_AGENT }),
      pacer: new RateLimitPacer(),
      policy: {
        ...DEFAULT_RETRY_POLICY,
        maxAttempts: opts.maxAttempts,
        maxWaitMs: opts.maxWaitMs,
        maxRetryTimeMs: opts.maxRetryTimeMs,
        maxWatchMs: opts.maxWatchMs,
        idempotency: opts.idempotency,
      },
      sleep: (ms: number) => sleep(ms),
      notice: (message: string) => activeProgress.notice(message),
    });
    if (opts.background) {
      const location = INPUT_FORMATS[opts.format].location;
      const sink = report ?? failureEcho(activeProgress, location);
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
          shouldStop: () => interrupted,
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
        outcome = { type: 'stopped', reason: result.refused };
      } else {
        background = { importId: result.importId, state: result.state, ...mirror?.outcomeOf(result.last) };
        const notMirror = mirror && result.state === 'completed' ? mirrorProblem(result.last) : undefined;
        if (notMirror !== undefined) {
          outcome = { type: 'stopped', reason: notMirror };
        } else if (result.state === 'watching') {
          outcome = { type: 'stopped', reason: `interrupted: import ${result.importId} goes on without watching; see it with "bulk-import imports show ${result.importId}"` };
        } else if (result.state === 'cancelled') {
          outcome = { type: 'stopped', reason: `import ${result.importId} was cancelled: the rows it wrote before stay written, the rest were not written` };
        } else if (result.state === 'failed') {
          outcome = { type: 'stopped', reason: `import ${result.importId} failed: nothing was written` };
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
          report: report ?? failureEcho(activeProgress, INPUT_FORMATS[opts.format].location),
          progress: activeProgress,
          shouldStop: () => interrupted,
        },
        totals,
      );
      if (interrupted) outcome = { type: 'stopped', reason: 'interrupted' };
    }
  } catch (error) {
    if (error instanceof InputError || error instanceof FileReadError || error instanceof FatalError) outcome = { type: 'stopped', reason: error.message };
    else outcome = { type: 'stopped', reason: `unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}` };
  } finally {
    process.off('SIGINT', onInterrupt);
    progress?.stop();
    await report?.close().catch((error: Error) => io.stderr.write(`error: could not finish the report: ${printable(error.message)}\n`));
  }

  if (!started) {
    // note: nothing was read or sent: the error alone says it all.
    if (outcome.type === 'stopped') io.stderr.write(`error: ${printable(outcome.reason)}\n`);
    return 2;
  }
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
  if (outcome.type === 'stopped') io.stderr.write(`error: ${printable(outcome.reason)}\n`);
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
