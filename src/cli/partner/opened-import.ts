import type { FieldSpec } from '../../shared/import/file/row-fields.js';
import type { CliOptions } from './args.js';
import type { CliIo } from './cli-io.js';
import { USER_AGENT } from './cli-version.js';
import { createApiContext } from './create-api-context.js';
import type { Progress } from './progress.js';
import type { ImportTotals } from './run-import.js';
import type { ResultsSink } from './results.js';
import type { FailureSink } from './settle-batch.js';
import type { InterruptWatch } from './watch-interrupt.js';

/** An import of a file once it is checked and counted: what its batches or its file import work with. */
export interface OpenedImport {
  opts: CliOptions;
  io: CliIo;
  /** the kind's fields, as the file's reader takes them */
  fields: FieldSpec[];
  progress: Progress;
  /** the report, or the first failures on stderr */
  report: FailureSink;
  /** --results, when asked */
  results?: ResultsSink;
  interrupt: InterruptWatch;
  totals: ImportTotals;
}

/** The run's one API context, its notices through the progress bar. note: made only when something is sent, so a local dry run needs no key or base URL. */
export function apiContextOf(run: OpenedImport) {
  const { opts, progress } = run;
  return createApiContext({ baseUrl: opts.baseUrl!, apiKey: opts.apiKey! }, opts, USER_AGENT, (message) => progress.notice(message));
}
