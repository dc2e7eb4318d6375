/**
 * @bulk-import/client: the Bulk Import API for partners' servers (README.md). `createClient` for
 * the helpers; `AttemptClient` and `sendUntilSettled` (the helpers' retry rule, with options) for
 * a caller with a retry policy of its own.
 */
export { createClient, type BulkImportClient, type ClientOptions } from './create-client.js';
export type { RowsImported, RowsDryRun, ImportRowsOptions, MergeRowsOptions, ReplaceRowsOptions } from './import-rows.js';
export type { RowsRemoved, RemoveRowsOptions } from './remove-rows.js';
export type { FileImport, FileAccepted } from './import-file.js';
export type { WatchOptions } from './watch-import.js';
export type { ListRowsOptions } from './pages.js';
export type { ExportRowsOptions } from './export-rows.js';
export type { Account, ArchiveResult, AsksForRows, BulkDryRunResult, BulkResult, DeleteResult, Import, ImportErrorRow, MergeRowInputs, RemovalRequest, RowInputs, RowOutcome, RowsAnswer, StoredRows } from './api-types.js';

export { ApiError } from './errors/api-error.js';
export { NetworkError } from './errors/network-error.js';
export { WaitTooLongError } from './errors/wait-too-long-error.js';
export { ReplyError } from './errors/reply-error.js';
export { WatchDeadlineError } from './errors/watch-deadline-error.js';

export { AttemptClient, type RemovalAction, type RowKind } from './attempt-client.js';
export type { AttemptNetworkFailure, AttemptResponse, AttemptResult } from './attempt-result.js';
export { sendAttempt, sendStreamAttempt, type AttemptRequest, type TransportOptions } from './send-attempt.js';
export { sendUntilSettled, sendWithRetries } from './send-with-retries.js';
export type { CallRules, LookedUp, RetryWaits } from './call-rules.js';
export type { RetryOutcome, RetryStop, StopCause } from './retry-outcome.js';
export { DEFAULT_RETRY_OPTIONS, type RetryEvent, type RetryOptions } from './retry-options.js';
export { backoffMs, type BackoffSettings } from './backoff.js';
export { retryAfterMs } from './retry-after.js';
export { RateLimitPacer } from './rate-limit-pacer.js';
export { MAX_REPLY_BYTES } from './reply-limit.js';
export { fileImportQuery, type FileImportOptions, type MirrorOptions, type UpdateMode } from './file-import-query.js';

export { API_VERSION } from './generated/api-version.js';
export { KNOWN_ERROR_CODES, KNOWN_ROW_ERROR_CODES, type KnownErrorCode, type KnownRowErrorCode } from './generated/known-codes.js';
export { CLIENT_VERSION } from './client-version.js';
export type { components, operations, paths } from './generated/openapi.js';
