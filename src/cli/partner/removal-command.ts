import { createReadStream } from 'node:fs';
import type { ImportKind } from '../../shared/import/import-kinds.js';
import type { RowRemovalAction } from '../../shared/import/row-removal-job.js';
import type { AttemptClient } from '@bulk-import/client';
import { removalReplyCheck, type CheckedRemoval } from './check-removal-reply.js';
import { checkReadable } from './check-readable.js';
import type { CliIo } from './cli-io.js';
import { USER_AGENT } from './cli-version.js';
import type { Command } from './command.js';
import { createApiContext } from './create-api-context.js';
import { failureEcho } from './failure-echo.js';
import { openReport } from './open-report.js';
import { printable, printableJson } from './printable.js';
import { createProgress } from './progress.js';
import { readEntryLines } from './read-entry-lines.js';
import { parseRemovalArgs, REMOVAL_USAGE, type RemovalOptions } from './removal-args.js';
import { formatRemovalSummary, removalUnaccountedAdvice } from './removal-summary.js';
import { runToEnd, writeStopReason, type RunOpened } from './run-to-end.js';
import { emptyRemovalTotals, runRemoval, type RemovalTotals } from './run-removal.js';
import { sendToTarget, type BatchOutcome, type BatchTarget } from './send-batch.js';
import { watchInterrupt } from './watch-interrupt.js';

/** Lines with an entry, counted before anything is sent (the progress bar's total). */
async function countEntries(file: string): Promise<number> {
  let count = 0;
  for await (const _ of readEntryLines(createReadStream(file))) count += 1;
  return count;
}

/** An archive's or delete's batch (POST /v1/api/{kind}/bulk-archive|bulk-delete). */
function removalTarget(client: AttemptClient, kind: ImportKind, action: RowRemovalAction): BatchTarget<CheckedRemoval> {
  return { kind, writtenStatus: 200, post: (body, key, dryRun) => client.postRemoval(kind, action, body, key, dryRun), check: removalReplyCheck(action) };
}

/**
 * `bulk-import listings|machines archive|delete FILE` (docs/partner-cli.md#archive-and-delete): the
 * file's entries, checked, sent a batch of 1,000 at a time with the import command's retries,
 * Idempotency-Keys, progress, report and exit status (removal-summary.ts).
 */
async function runRemovals(opts: RemovalOptions, io: CliIo): Promise<number> {
  const startedAt = Date.now();
  const totals: RemovalTotals = emptyRemovalTotals();
  const interrupt = watchInterrupt(io, '\ninterrupted: finishing the batch in flight (Ctrl-C again to quit at once)\n');
  const opened: RunOpened = {};
  const outcome = await runToEnd(io, interrupt, opened, async () => {
    await checkReadable(opts.file);
    if (opts.report) opened.report = await openReport(opts.report, 'line');
    const total = await countEntries(opts.file);
    const activeProgress = createProgress({ total, stream: io.stderr, quiet: opts.quiet });
    opened.progress = activeProgress;
    let send: ((body: string, entryCount: number) => Promise<BatchOutcome<CheckedRemoval>>) | undefined;
    if (opts.dryRun !== 'local') {
      const context = createApiContext({ baseUrl: opts.baseUrl!, apiKey: opts.apiKey! }, opts, USER_AGENT, (message) => activeProgress.notice(message));
      const target = removalTarget(context.client, opts.kind, opts.action);
      send = (body, entryCount) => sendToTarget(context, target, body, entryCount, opts.dryRun === 'server');
    }
    await runRemoval(
      {
        action: opts.action,
        by: opts.by,
        entries: readEntryLines(createReadStream(opts.file)),
        ...(send ? { send } : {}),
        report: opened.report ?? failureEcho(activeProgress, 'line', 'entries'),
        progress: activeProgress,
        shouldStop: interrupt.interrupted,
      },
      totals,
    );
    return interrupt.interrupted() ? { type: 'stopped', reason: 'interrupted' } : { type: 'finished' };
  });
  if (typeof outcome === 'number') return outcome;
  const summary = formatRemovalSummary({ kind: opts.kind, action: opts.action, file: opts.file, dryRun: opts.dryRun, totals, seconds: (Date.now() - startedAt) / 1000, outcome });
  writeStopReason(io, outcome);
  const advice = opts.dryRun === false ? removalUnaccountedAdvice(opts.action, totals) : undefined;
  if (advice !== undefined) io.stderr.write(`note: ${printable(advice)}\n`);
  io.stdout.write(`${opts.json ? printableJson(summary.json) : printable(summary.text)}\n`);
  return summary.exitCode;
}

/** `bulk-import <kind> archive FILE` or `... delete FILE`. */
export function removalCommand(kind: ImportKind, action: RowRemovalAction): Command<RemovalOptions> {
  return { usage: REMOVAL_USAGE, parse: (args, env) => parseRemovalArgs(kind, action, args, env), run: runRemovals };
}
