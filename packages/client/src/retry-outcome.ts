import type { AttemptResponse, AttemptResult } from './attempt-result.js';

/** Why a call's retries stopped short of an answer. */
export type StopCause =
  /** the last attempt failed, and it was the last one `maxAttempts` allows */
  | { cause: 'attempts-used-up' }
  /** the request may have been written, and the call is not idempotent: sending it again could write it twice */
  | { cause: 'not-idempotent' }
  /** the server asked to wait `waitMs` (`Retry-After`), longer than `maxWaitMs` (`allowedMs`) */
  | { cause: 'wait-too-long'; waitMs: number; allowedMs: number }
  /** the next wait would end past the deadline or maxRetryTimeMs: `allowedMs` was left, `spentMs` since the first attempt */
  | { cause: 'out-of-time'; waitMs: number; allowedMs: number; spentMs: number };

export type RetryStop = StopCause & {
  type: 'stopped';
  /** the failure in words (CallRules.describe); `the minute quota is used up` for a pacing wait */
  reason: string;
  /** attempts used (429s waited out `as-asked` use none) */
  attempts: number;
  /** what the last attempt came back with; undefined when the call stopped before its first */
  last: AttemptResult | undefined;
  /** some attempt may have been written: a lost connection or an answer whose outcome is unknown, with no proof since that nothing was */
  mayHaveWritten: boolean;
};

/** How a call ended (sendUntilSettled). */
export type RetryOutcome<Found = never> =
  /** an answer the rules do not retry (with CallRules.expected: one of those, a redirect, or a 4xx other than 429) */
  | { type: 'answered'; reply: AttemptResponse; mayHaveWritten: boolean }
  /** what CallRules.lookUp found of an answer whose outcome was unknown */
  | { type: 'found'; found: Found }
  | RetryStop;
