import { FileReadError } from '../../shared/import/file/file-read-error.js';
import type { CliIo } from './cli-io.js';
import { FatalError } from './fatal-error.js';
import { InputError } from './input-error.js';
import { printable } from './printable.js';
import type { Progress } from './progress.js';
import type { ReportWriter } from './report.js';
import type { ResultsWriter } from './results.js';
import type { Outcome } from './run-summary.js';
import type { InterruptWatch } from './watch-interrupt.js';

/** What a run opens as it goes; runToEnd closes it, however the run ended. */
export interface RunOpened {
  report?: ReportWriter;
  /** --results */
  results?: ResultsWriter;
  /** set once the file is checked and counted: from then on the run has a summary to print */
  progress?: Progress;
}

/**
 * Runs an import's or a removal's `body` to its outcome, or to exit status 2 when it stopped
 * before it started (nothing read or sent: the error alone says it all, on stderr). A thrown
 * InputError, FileReadError or FatalError stops the run with its message. note: an error the CLI
 * did not expect keeps its stack, the one clue to a bug. The Ctrl-C watch, the bar and the report
 * are closed whatever happened.
 */
export async function runToEnd(io: CliIo, interrupt: InterruptWatch, opened: RunOpened, body: () => Promise<Outcome>): Promise<Outcome | number> {
  let outcome: Outcome;
  try {
    outcome = await body();
  } catch (error) {
    if (error instanceof InputError || error instanceof FileReadError || error instanceof FatalError) outcome = { type: 'stopped', reason: error.message };
    else outcome = { type: 'stopped', reason: `unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}` };
  } finally {
    interrupt.stop();
    opened.progress?.stop();
    // note: a report that cannot be finished is said, not thrown, so the summary still prints.
    await opened.report?.close().catch((error: Error) => io.stderr.write(`error: could not finish the report: ${printable(error.message)}\n`));
    await opened.results?.close().catch((error: Error) => io.stderr.write(`error: could not finish the results: ${printable(error.message)}\n`));
  }
  if (opened.progress === undefined) {
    writeStopReason(io, outcome);
    return 2;
  }
  return outcome;
}

/** Why a run stopped, on stderr (the summary on stdout says what it did). */
export function writeStopReason(io: CliIo, outcome: Outcome): void {
  if (outcome.type === 'stopped') io.stderr.write(`error: ${printable(outcome.reason)}\n`);
}
