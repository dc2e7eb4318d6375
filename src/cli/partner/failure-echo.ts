import type { Progress } from './progress.js';
import type { FailureSink } from './settle-batch.js';

const FAILURES_SHOWN_WITHOUT_REPORT = 10;

/**
 * Without --report, the first failures are shown on stderr so a run is never silent about them.
 * note: only the first ten: a bad file must not flood the terminal; the report lists them all.
 */
export function failureEcho(progress: Progress, location: 'line' | 'index', noun: 'rows' | 'entries'): FailureSink {
  let shown = 0;
  return {
    async add(failures) {
      for (const failure of failures) {
        shown += 1;
        if (shown <= FAILURES_SHOWN_WITHOUT_REPORT) progress.notice(`${location} ${failure.location}: ${failure.reason}`);
        else if (shown === FAILURES_SHOWN_WITHOUT_REPORT + 1) progress.notice(`more ${noun} failed; --report FILE lists them all`);
      }
    },
  };
}
