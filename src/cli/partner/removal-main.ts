import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { FileReadError } from '../../shared/import/file/file-read-error.js';
import type { ImportKind } from '../../shared/import/import-kinds.js';
import type { RowRemovalAction } from '../../shared/import/row-removal-job.js';
import { ApiClient } from './api-client.js';
import { insecureWarning } from './api-target.js';
import { removalReplyCheck, type CheckedRemoval } from './check-removal-reply.js';
import type { CliIo } from './cli-io.js';
import { InputError } from './input-error.js';
import { printable, printableJson } from './printable.js';
import { createProgress, type Progress } from './progress.js';
import { RateLimitPacer } from './rate-limit.js';
import { readEntryLines } from './read-entry-lines.js';
import { parseRemovalArgs, REMOVAL_USAGE, type RemovalOptions } from './removal-args.js';
import { formatRemovalSummary, removalUnaccountedAdvice } from './removal-summary.js';
import { ReportWriter } from './report.js';
import type { FailureSink } from './run-import.js';
import { emptyRemovalTotals, runRemoval, type RemovalTotals } from './run-removal.js';
import { DEFAULT_RETRY_POLICY, FatalError, sendToTarget, type BatchOutcome, type BatchTarget, type SendContext } from './send-batch.js';
import type { Outcome } from './summary.js';
import { UsageError } from './usage-error.js';
import { VERSION_LINE } from './cli-version.js';

const FAILURES_SHOWN_WITHOUT_REPORT = 10;

/** Without --report, the first failed entries are shown on stderr so a run is never silent about them. */
function failureEcho(progress: Progress): FailureSink {
  let shown = 0;
  return {
    async add(failures) {
      for (const failure of failures) {
        shown += 1;
        if (shown <= FAILURES_SHOWN_WITHOUT_REPORT) progress.notice(`line ${failure.location}: ${failure.reason}`);
        else if (shown === FAILURES_SHOWN_WITHOUT_REPORT + 1) progress.notice('more entries failed; --report FILE lists them all');
      }
    },
  };
}

/** Lines with an entry, counted before anything is sent (the progress bar's total). */
async function countEntries(file: string): Promise<number> {
  let count = 0;
  for await (const _ of readEntryLines(createReadStream(file))) count += 1;
  return count;
}

/** An archive's or delete's batch (POST /v1/api/{kind}/bulk-archive|bulk-delete). */
function removalTarget(client: ApiClient, kind: ImportKind, action: RowRemovalAction): BatchTarget<CheckedRemoval> {
  return { kind, writtenStatus: 200, post: (body, key, dryRun) => client.postRemoval(kind, action, body, key, dryRun), check: removalReplyCheck(action) };
}

/**
 * `bulk-import listings|machines archive|delete FILE` (docs/partner-cli.md#archive-and-delete): the
 * file's entries, checked, sent a batch of 1,000 at a time with the import command's retries,
 * Idempotency-Keys, progress, report and exit status (removal-summary.ts).
 */
export async function removalMain(kind: ImportKind, action: RowRemovalAction, argv: string[], env: NodeJS.ProcessEnv, io: CliIo, userAgent: string): Promise<number> {
  let options: RemovalOptions | 'help' | 'version';
  try {
    options = parseRemovalArgs(kind, action, argv, env);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.stderr.write(`error: ${printable(error.message)}\n\n${REMOVAL_USAGE}\n`);
    return 2;
  }
  if (options === 'help') {
    io.stdout.write(`${REMOVAL_USAGE}\n`);
    return 0;
  }
  if (options === 'version') {
    io.stdout.write(`${VERSION_LINE}\n`);
    return 0;
  }
  const opts = options;
  if (opts.insecureHttp) io.stderr.write(`warning: ${printable(insecureWarning({ baseUrl: opts.baseUrl!, baseUrlOrigin: opts.baseUrlOrigin! }))}\n`);
  const startedAt = Date.now();
  const totals: RemovalTotals = emptyRemovalTotals();
  let report: ReportWriter | undefined;
  let progress: Progress | undefined;
  let outcome: Outcome = { type: 'finished' };
  let interrupted = false;
  let started = false;
  const onInterrupt = () => {
    // note: a first Ctrl-C lets the batch in flight finish, so its outcome is known and reported.
    if (interrupted) process.exit(2);
    interrupted = true;
    io.stderr.write('\ninterrupted: finishing the batch in flight (Ctrl-C again to quit at once)\n');
  };
  process.on('SIGINT', onInterrupt);
  try {
    try {
      if (!(await stat(opts.file)).isFile()) throw new Error('not a regular file');
    } catch (error) {
      throw new InputError(`cannot read ${opts.file}: ${(error as Error).message}`);
    }
    if (opts.report) {
      try {
        report = await ReportWriter.open(opts.report.path, opts.report.format, 'line');
      } catch (error) {
        throw new InputError(`cannot write the report ${opts.report.path}: ${(error as Error).message}`);
      }
    }
    const total = await countEntries(opts.file);
    const activeProgress = createProgress({ total, stream: io.stderr, quiet: opts.quiet });
    progress = activeProgress;
    started = true;
    let send: ((body: string, entryCount: number) => Promise<BatchOutcome<CheckedRemoval>>) | undefined;
    if (opts.dryRun !== 'local') {
      const client = new ApiClient({ baseUrl: opts.baseUrl!, apiKey: opts.apiKey!, timeoutMs: opts.timeoutMs, userAgent });
      const context: SendContext = {
        client,
        pacer: new RateLimitPacer(),
        policy: { ...DEFAULT_RETRY_POLICY, maxAttempts: opts.maxAttempts, maxWaitMs: opts.maxWaitMs, maxRetryTimeMs: opts.maxRetryTimeMs, maxWatchMs: opts.maxWatchMs, idempotency: opts.idempotency },
        sleep: (ms: number) => sleep(ms),
        notice: (message: string) => activeProgress.notice(message),
      };
      const target = removalTarget(client, opts.kind, opts.action);
      send = (body, entryCount) => sendToTarget(context, target, body, entryCount, opts.dryRun === 'server');
    }
    await runRemoval(
      {
        action: opts.action,
        by: opts.by,
        entries: readEntryLines(createReadStream(opts.file)),
        ...(send ? { send } : {}),
        report: report ?? failureEcho(activeProgress),
        progress: activeProgress,
        shouldStop: () => interrupted,
      },
      totals,
    );
    if (interrupted) outcome = { type: 'stopped', reason: 'interrupted' };
  } catch (error) {
    if (error instanceof InputError || error instanceof FileReadError || error instanceof FatalError) outcome = { type: 'stopped', reason: error.message };
    else outcome = { type: 'stopped', reason: `unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}` };
  } finally {
    process.off('SIGINT', onInterrupt);
    progress?.stop();
    await report?.close().catch((error: Error) => io.stderr.write(`error: could not finish the report: ${printable(error.message)}\n`));
  }
  if (!started) {
    if (outcome.type === 'stopped') io.stderr.write(`error: ${printable(outcome.reason)}\n`);
    return 2;
  }
  const summary = formatRemovalSummary({ kind: opts.kind, action: opts.action, file: opts.file, dryRun: opts.dryRun, totals, seconds: (Date.now() - startedAt) / 1000, outcome });
  if (outcome.type === 'stopped') io.stderr.write(`error: ${printable(outcome.reason)}\n`);
  const advice = opts.dryRun === false ? removalUnaccountedAdvice(opts.action, totals) : undefined;
  if (advice !== undefined) io.stderr.write(`note: ${printable(advice)}\n`);
  io.stdout.write(`${opts.json ? printableJson(summary.json) : printable(summary.text)}\n`);
  return summary.exitCode;
}
