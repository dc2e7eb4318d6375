import { DEFAULT_RETRY_POLICY } from './retry-policy.js';
import { positiveNumber } from './usage-error.js';

/** The options of every command that talks to the API, as parseArgs takes them. */
export const REQUEST_OPTIONS = {
  'api-key': { type: 'string' },
  'base-url': { type: 'string' },
  insecure: { type: 'boolean', default: false },
  retries: { type: 'string' },
  timeout: { type: 'string' },
  'max-wait': { type: 'string' },
  'max-retry-time': { type: 'string' },
} as const;

/** Their lines of the usage text. */
export const REQUEST_OPTIONS_USAGE = `  --api-key KEY          API key (default: $BULK_IMPORT_API_KEY)
  --base-url URL         API base URL, e.g. https://api.example.com (default: $BULK_IMPORT_BASE_URL)
  --insecure             allow a plain http:// base URL to a host other than this machine (the
                         API key then crosses the network unencrypted)
  --retries N            attempts per request on network errors and 5xx (default ${DEFAULT_RETRY_POLICY.maxAttempts})
  --timeout SEC          per request (default 120)
  --max-wait SEC         longest Retry-After to wait out, else stop (default ${DEFAULT_RETRY_POLICY.maxWaitMs / 1000})
  --max-retry-time SEC   longest time to keep retrying one batch or read, waits included (429s,
                         503s, lost replies), else stop (default ${DEFAULT_RETRY_POLICY.maxRetryTimeMs / 1000})`;

export interface RequestLimits {
  maxAttempts: number;
  timeoutMs: number;
  maxWaitMs: number;
  maxRetryTimeMs: number;
}

export function requestLimitsOf(values: { retries?: string; timeout?: string; 'max-wait'?: string; 'max-retry-time'?: string }): RequestLimits {
  return {
    maxAttempts: positiveNumber('--retries', values.retries, DEFAULT_RETRY_POLICY.maxAttempts, true),
    timeoutMs: positiveNumber('--timeout', values.timeout, 120) * 1000,
    maxWaitMs: positiveNumber('--max-wait', values['max-wait'], DEFAULT_RETRY_POLICY.maxWaitMs / 1000) * 1000,
    maxRetryTimeMs: positiveNumber('--max-retry-time', values['max-retry-time'], DEFAULT_RETRY_POLICY.maxRetryTimeMs / 1000) * 1000,
  };
}
