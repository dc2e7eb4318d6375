import type { BackoffSettings } from './backoff.js';

/** What happened before a retry, for a log line or a progress bar. */
export interface RetryEvent {
  /**
   * the wait's cause: `paced`, the minute quota used up (before an attempt); `rate-limited`, a 429
   * waited out without using an attempt (CallRules.waits `as-asked`); `retry`, a failed attempt
   */
  kind: 'paced' | 'rate-limited' | 'retry';
  /** the attempt that failed, from 1; 0 for a wait before any attempt (the minute quota used up) */
  attempt: number;
  /** the wait before the next one, in milliseconds */
  delayMs: number;
  /** the status that asked for it, or undefined for a network failure */
  status: number | undefined;
  reason: string;
}

/** How the helpers retry, and the hooks a caller (or a test) replaces. */
export interface RetryOptions extends BackoffSettings {
  /** attempts per call, 429s and 503s included (default 5) */
  maxAttempts: number;
  /** the longest `Retry-After` waited out (default 60 s); past it, WaitTooLongError */
  maxWaitMs: number;
  sleep: (ms: number) => Promise<void>;
  random: () => number;
  /** the clock deadlines are measured on */
  now: () => number;
  onRetry?: (event: RetryEvent) => void;
}

export const DEFAULT_RETRY_OPTIONS: RetryOptions = {
  maxAttempts: 5,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  maxWaitMs: 60_000,
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  random: Math.random,
  now: Date.now,
};
