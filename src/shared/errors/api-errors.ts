import { ApiError, retryAfterHeaders } from './api-error.js';
import type { RowError } from '../rows/row-errors.js';
import { echoedText } from './echoed-text.js';
import { importLocation } from '../import-location.js';

/**
 * Every error the API answers, in one table: its status, its code and its text (docs/errors.md
 * and the OpenAPI document show the same). The factories below build each one; nothing else
 * constructs an ApiError. note: texts that carry a value are functions of it.
 *
 * `code` is what a program switches on (docs/errors.md#codes): snake_case, one per kind, never
 * reused. Once published a code keeps its meaning for good; a new condition gets a new code,
 * and the `error` texts stay as they are, word for word.
 */
export const API_ERRORS = {
  invalidJson: { status: 400, code: 'invalid_json', text: 'Invalid JSON body' },
  bulkEnvelope: { status: 400, code: 'missing_rows_array', text: (kind: string) => `Body must be an object with a "${kind}" array` },
  entriesEnvelope: { status: 400, code: 'missing_entries_array', text: 'Body must be an object with either an "external_ids" or an "ids" array' },
  noRows: { status: 400, code: 'no_rows', text: (kind: string, maxRows: number) => `No rows: send 1 to ${maxRows} ${kind}` },
  tooManyRows: { status: 400, code: 'too_many_rows', text: (kind: string, maxRows: number) => `Too many rows: at most ${maxRows} ${kind} per request` },
  noValidRows: { status: 400, code: 'no_valid_rows', text: 'no valid rows' },
  importKindMalformed: { status: 400, code: 'invalid_import_kind', text: 'kind must be listings or machines' },
  fileEmpty: { status: 400, code: 'file_empty', text: 'The file holds no rows' },
  fileNotUtf8: { status: 400, code: 'file_not_utf8', text: 'The file is not UTF-8 text' },
  fileUnreadable: { status: 400, code: 'file_unreadable', text: (problem: string) => `The file cannot be read: ${problem}` },
  fileTooManyRows: { status: 400, code: 'file_too_many_rows', text: (maxRows: number) => `Too many rows: at most ${maxRows} per file` },
  keyEnvelope: { status: 400, code: 'key_body_not_object', text: 'Body must be an object with "label" and "scopes"' },
  keyChangeEnvelope: { status: 400, code: 'key_change_not_object', text: 'Body must be an object with "label" or "allowed_ips"' },
  rollBodyMalformed: { status: 400, code: 'invalid_expires_in_sec', text: 'Body must be empty or an object whose expires_in_sec is a whole number from 0 to 604800' },
  keyBody: { status: 400, code: 'invalid_key_fields', text: (problems: string) => problems },
  unknownScope: { status: 400, code: 'unknown_scope', text: (quotedScope: string, valid: readonly string[]) => `scopes: unknown scope ${quotedScope}; valid scopes: ${valid.join(', ')}` },
  idempotencyKeyMalformed: { status: 400, code: 'invalid_idempotency_key', text: 'Idempotency-Key must be 1 to 255 printable ASCII characters' },
  dryRunMalformed: { status: 400, code: 'invalid_dry_run', text: 'dry_run must be true or false' },
  updateMalformed: { status: 400, code: 'invalid_update', text: 'update must be replace or merge' },
  returnMalformed: { status: 400, code: 'invalid_return', text: 'return must be rows' },
  modeMalformed: { status: 400, code: 'invalid_mode', text: 'mode must be upsert or mirror' },
  missingMalformed: { status: 400, code: 'invalid_missing', text: 'missing must be archive or delete' },
  maxRemovalMalformed: { status: 400, code: 'invalid_max_removal', text: 'max_removal must be a whole number from 0 to 100' },
  removalWithoutMirror: { status: 400, code: 'removal_without_mirror', text: 'missing and max_removal apply only with mode=mirror' },
  dryRunWithIdempotencyKey: { status: 400, code: 'dry_run_with_idempotency_key', text: 'Idempotency-Key cannot be used with dry_run=true: a dry run writes nothing to replay' },
  unknownQueryParameter: { status: 400, code: 'unknown_query_parameter', text: (name: string) => `Unknown query parameter: ${name}` },
  pageLimitMalformed: { status: 400, code: 'invalid_limit', text: (max: number) => `limit must be a whole number from 1 to ${max}` },
  startingAfterUnknown: { status: 400, code: 'unknown_starting_after', text: 'starting_after: no such import' },
  startingAfterMalformed: { status: 400, code: 'invalid_starting_after', text: 'starting_after must be a row index (a whole number from 0)' },
  keyStartingAfterUnknown: { status: 400, code: 'unknown_key_starting_after', text: 'starting_after: no such key' },
  keyStatusMalformed: { status: 400, code: 'invalid_key_status', text: 'status must be active, expired, revoked or all' },
  rowStartingAfterMalformed: { status: 400, code: 'invalid_row_starting_after', text: 'starting_after must be the id of a row (a UUID)' },
  externalIdFilterMalformed: { status: 400, code: 'invalid_external_id', text: 'external_id must be 1 to 100 printable characters' },
  updatedSinceMalformed: { status: 400, code: 'invalid_updated_since', text: 'updated_since must be an ISO 8601 date and time with a time zone, e.g. 2026-11-24T02:00:00Z' },
  archivedMalformed: { status: 400, code: 'invalid_archived', text: 'archived must be true or false' },
  exportFormatMalformed: { status: 400, code: 'invalid_export_format', text: 'format must be ndjson or csv' },
  malformedUrl: { status: 400, code: 'malformed_url', text: 'Malformed request URL' },
  badRequest: { status: 400, code: 'bad_request', text: 'Bad request' },
  apiKeyMissing: { status: 401, code: 'missing_api_key', text: 'Missing or malformed API key' },
  apiKeyInvalid: { status: 401, code: 'invalid_api_key', text: 'Invalid API key' },
  apiKeyExpired: { status: 401, code: 'api_key_expired', text: 'Invalid API key' },
  sessionMissing: { status: 401, code: 'missing_session_token', text: 'Missing or malformed session token' },
  sessionInvalid: { status: 401, code: 'invalid_session_token', text: 'Invalid session token' },
  adminAuthRequired: { status: 401, code: 'admin_auth_required', text: 'Authentication required' },
  tierRequired: { status: 402, code: 'subscription_required', text: 'API access requires an Enterprise or Global subscription' },
  scopeMissing: { status: 403, code: 'missing_scope', text: (scope: string) => `Missing required scope: ${scope}` },
  originRefused: { status: 403, code: 'origin_not_allowed', text: 'Cross-origin requests are not allowed' },
  ipNotAllowed: { status: 403, code: 'ip_not_allowed', text: 'API key not allowed from this address' },
  keyNotFound: { status: 404, code: 'api_key_not_found', text: 'API key not found' },
  notFound: { status: 404, code: 'not_found', text: 'Not found' },
  importNotFound: { status: 404, code: 'import_not_found', text: 'Import not found' },
  listingNotFound: { status: 404, code: 'listing_not_found', text: 'Listing not found' },
  machineNotFound: { status: 404, code: 'machine_not_found', text: 'Machine not found' },
  methodNotAllowed: { status: 405, code: 'method_not_allowed', text: 'Method not allowed' },
  requestTimeout: { status: 408, code: 'request_timeout', text: 'Request timeout' },
  bodyTooLarge: { status: 413, code: 'body_too_large', text: 'Request body too large' },
  urlTooLong: { status: 414, code: 'url_too_long', text: 'Request URL too long' },
  unsupportedMediaType: { status: 415, code: 'unsupported_media_type', text: 'Content-Type must be application/json' },
  fileMediaType: { status: 415, code: 'unsupported_file_media_type', text: 'Content-Type must be application/x-ndjson or text/csv' },
  keyNotRollable: { status: 409, code: 'api_key_not_rollable', text: 'API key cannot be rolled: it is revoked, expired or already rolled' },
  keyEnded: { status: 409, code: 'api_key_ended', text: 'API key is revoked or expired' },
  idempotencyKeyReused: { status: 422, code: 'idempotency_key_reused', text: 'Idempotency-Key was already used with a different request body' },
  rateLimitedMinute: { status: 429, code: 'rate_limited_minute', text: 'Rate limit exceeded (per-minute)' },
  rateLimitedDay: { status: 429, code: 'rate_limited_day', text: 'Rate limit exceeded (per-day)' },
  lockedOut: { status: 429, code: 'locked_out', text: 'Too many failed authentication attempts' },
  tooManyConcurrent: { status: 429, code: 'too_many_concurrent_requests', text: 'Too many concurrent requests' },
  tooManyFileImports: { status: 429, code: 'too_many_file_imports', text: 'Too many file imports in progress' },
  tooManyExports: { status: 429, code: 'too_many_exports', text: 'An export of this account is already running' },
  keyCap: { status: 429, code: 'active_key_limit', text: (cap: number) => `Active key limit reached (${cap}); revoke a key first` },
  headersTooLarge: { status: 431, code: 'headers_too_large', text: 'Request headers too large' },
  internal: { status: 500, code: 'internal_error', text: 'Internal server error' },
  serviceUnavailable: { status: 503, code: 'service_unavailable', text: 'Service temporarily unavailable' },
  overloaded: { status: 503, code: 'overloaded', text: 'Service overloaded, retry shortly' },
  workersUnavailable: { status: 503, code: 'workers_unavailable', text: 'Import workers unavailable; nothing was written' },
  importFailed: { status: 503, code: 'import_failed', text: 'Import failed; nothing was written' },
  importOutcomeUnknown: { status: 503, code: 'import_outcome_unknown', text: 'Import may have been accepted; look it up before sending it again' },
  stillRunning: { status: 504, code: 'import_still_running', text: 'Import is still running; check before retrying' },
} as const satisfies Record<string, { status: number; code: string; text: string | ((...args: never[]) => string) }>;

export type ApiErrorKind = keyof typeof API_ERRORS;

/** The error codes the service sends today; the document lists them open, as codes may be added (docs/errors.md#codes). */
export type ApiErrorCode = (typeof API_ERRORS)[ApiErrorKind]['code'];

export const API_ERROR_CODES = Object.values(API_ERRORS).map((entry) => entry.code) as readonly ApiErrorCode[];

/** The rate-limit windows a 429 names. */
export type RateLimitWindow = 'per-minute' | 'per-day';

/** Seconds a 503 of an unavailable dependency or an overloaded process asks to wait. */
const RETRY_SOON_SEC = 5;
/** no worker took the import: workers are away for longer than a blip */
const WORKERS_UNAVAILABLE_RETRY_SEC = 30;
/** a slot of the in-flight cap frees within a request's time */
const CONCURRENCY_RETRY_SEC = 1;
/** a file import takes minutes: looking again in one is soon enough */
const FILE_IMPORT_RETRY_SEC = 60;
/** an export of a large catalogue takes seconds to a minute */
const EXPORT_RETRY_SEC = 10;
/**
 * The most characters of a file's problem (`The file cannot be read: <why>`). note: the longest a
 * reader writes is its header complaint, which names the kind's fields: 283 characters for
 * listings with 64 of the header quoted. A bound, not a length a real problem is cut to.
 */
export const FILE_PROBLEM_MAX_LENGTH = 400;

type TextKind = { [K in ApiErrorKind]: (typeof API_ERRORS)[K]['text'] extends string ? K : never }[ApiErrorKind];

/** The error of `kind` with the catalogue's status and `error` text (the kind's own, or one it built). */
const answer = (kind: ApiErrorKind, error: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  new ApiError(API_ERRORS[kind].status, { error, code: API_ERRORS[kind].code, ...extra }, headers);

const plain = (kind: TextKind, extra: Record<string, unknown> = {}) => answer(kind, API_ERRORS[kind].text, extra);

const retryAfter = (kind: ApiErrorKind, error: string, retryAfterSec: number, reference: ImportReference = NO_IMPORT) =>
  answer(kind, error, { retry_after_sec: retryAfterSec, ...reference.fields }, { ...retryAfterHeaders(retryAfterSec), ...reference.headers });

/** The import an answer names: `import_id` in its body and `Location` (docs/imports.md). */
interface ImportReference {
  fields: { import_id?: string };
  headers: { location?: string };
}
const NO_IMPORT: ImportReference = { fields: {}, headers: {} };
const referenceTo = (importId: string | undefined): ImportReference =>
  importId === undefined ? NO_IMPORT : { fields: { import_id: importId }, headers: { location: importLocation(importId) } };

/** The factories of API_ERRORS, one per kind. */
export const apiErrors = {
  invalidJson: () => plain('invalidJson'),
  bulkEnvelope: (kind: string) => answer('bulkEnvelope', API_ERRORS.bulkEnvelope.text(kind)),
  entriesEnvelope: () => plain('entriesEnvelope'),
  noRows: (kind: string, maxRows: number) => answer('noRows', API_ERRORS.noRows.text(kind, maxRows)),
  tooManyRows: (kind: string, maxRows: number, received: number) => answer('tooManyRows', API_ERRORS.tooManyRows.text(kind, maxRows), { received }),
  noValidRows: (errors: RowError[]) => plain('noValidRows', { errors }),
  importKindMalformed: () => plain('importKindMalformed'),
  fileEmpty: () => plain('fileEmpty'),
  fileNotUtf8: () => plain('fileNotUtf8'),
  /**
   * `problem` as the file's reader says it, the partner text it quotes already echoed; echoed
   * again whole, to FILE_PROBLEM_MAX_LENGTH, so that no reader's message can carry a control
   * character or a megabyte (echoedText leaves its own output as it is)
   */
  fileUnreadable: (problem: string) => answer('fileUnreadable', API_ERRORS.fileUnreadable.text(echoedText(problem, { max: FILE_PROBLEM_MAX_LENGTH }))),
  fileTooManyRows: (maxRows: number) => answer('fileTooManyRows', API_ERRORS.fileTooManyRows.text(maxRows)),
  keyEnvelope: () => plain('keyEnvelope'),
  keyChangeEnvelope: () => plain('keyChangeEnvelope'),
  rollBodyMalformed: () => plain('rollBodyMalformed'),
  keyBody: (problems: string) => answer('keyBody', API_ERRORS.keyBody.text(problems)),
  /** `scope` as the partner sent it; the text shows it quoted through echoedText */
  unknownScope: (scope: string, valid: readonly string[]) => answer('unknownScope', API_ERRORS.unknownScope.text(echoedText(scope, { quoted: true }), valid)),
  idempotencyKeyMalformed: () => plain('idempotencyKeyMalformed'),
  dryRunMalformed: () => plain('dryRunMalformed'),
  updateMalformed: () => plain('updateMalformed'),
  returnMalformed: () => plain('returnMalformed'),
  modeMalformed: () => plain('modeMalformed'),
  missingMalformed: () => plain('missingMalformed'),
  maxRemovalMalformed: () => plain('maxRemovalMalformed'),
  removalWithoutMirror: () => plain('removalWithoutMirror'),
  dryRunWithIdempotencyKey: () => plain('dryRunWithIdempotencyKey'),
  /** `name` as the partner sent it; the text shows it through echoedText */
  unknownQueryParameter: (name: string) => answer('unknownQueryParameter', API_ERRORS.unknownQueryParameter.text(echoedText(name))),
  pageLimitMalformed: (max: number) => answer('pageLimitMalformed', API_ERRORS.pageLimitMalformed.text(max)),
  startingAfterUnknown: () => plain('startingAfterUnknown'),
  startingAfterMalformed: () => plain('startingAfterMalformed'),
  keyStartingAfterUnknown: () => plain('keyStartingAfterUnknown'),
  keyStatusMalformed: () => plain('keyStatusMalformed'),
  rowStartingAfterMalformed: () => plain('rowStartingAfterMalformed'),
  externalIdFilterMalformed: () => plain('externalIdFilterMalformed'),
  updatedSinceMalformed: () => plain('updatedSinceMalformed'),
  archivedMalformed: () => plain('archivedMalformed'),
  exportFormatMalformed: () => plain('exportFormatMalformed'),
  malformedUrl: () => plain('malformedUrl'),
  badRequest: () => plain('badRequest'),
  apiKeyMissing: () => plain('apiKeyMissing'),
  apiKeyInvalid: () => plain('apiKeyInvalid'),
  apiKeyExpired: () => plain('apiKeyExpired'),
  sessionMissing: () => plain('sessionMissing'),
  sessionInvalid: () => plain('sessionInvalid'),
  adminAuthRequired: () => plain('adminAuthRequired'),
  tierRequired: (currentTier: string, upgradeUrl: string) => plain('tierRequired', { current_tier: currentTier, upgrade_url: upgradeUrl }),
  scopeMissing: (scope: string) => answer('scopeMissing', API_ERRORS.scopeMissing.text(scope)),
  originRefused: () => plain('originRefused'),
  ipNotAllowed: () => plain('ipNotAllowed'),
  keyNotFound: () => plain('keyNotFound'),
  notFound: () => plain('notFound'),
  importNotFound: () => plain('importNotFound'),
  listingNotFound: () => plain('listingNotFound'),
  machineNotFound: () => plain('machineNotFound'),
  /** `allowed`: the methods the path takes, sent as `Allow` */
  methodNotAllowed: (allowed: readonly string[]) => answer('methodNotAllowed', API_ERRORS.methodNotAllowed.text, {}, { allow: allowed.join(', ') }),
  requestTimeout: () => plain('requestTimeout'),
  bodyTooLarge: (limitBytes: number | undefined) => plain('bodyTooLarge', { limit_bytes: limitBytes }),
  urlTooLong: () => plain('urlTooLong'),
  unsupportedMediaType: () => plain('unsupportedMediaType'),
  fileMediaType: () => plain('fileMediaType'),
  keyNotRollable: () => plain('keyNotRollable'),
  keyEnded: () => plain('keyEnded'),
  idempotencyKeyReused: () => plain('idempotencyKeyReused'),
  rateLimitedMinute: (retryAfterSec: number) => retryAfter('rateLimitedMinute', API_ERRORS.rateLimitedMinute.text, retryAfterSec),
  rateLimitedDay: (retryAfterSec: number) => retryAfter('rateLimitedDay', API_ERRORS.rateLimitedDay.text, retryAfterSec),
  /** The 429 of the window that refused, for callers that hold the window as a value (the quota's decision). */
  rateLimited: (window: RateLimitWindow, retryAfterSec: number) =>
    window === 'per-minute'
      ? retryAfter('rateLimitedMinute', API_ERRORS.rateLimitedMinute.text, retryAfterSec)
      : retryAfter('rateLimitedDay', API_ERRORS.rateLimitedDay.text, retryAfterSec),
  lockedOut: (retryAfterSec: number) => retryAfter('lockedOut', API_ERRORS.lockedOut.text, retryAfterSec),
  tooManyConcurrent: () => retryAfter('tooManyConcurrent', API_ERRORS.tooManyConcurrent.text, CONCURRENCY_RETRY_SEC),
  tooManyFileImports: () => retryAfter('tooManyFileImports', API_ERRORS.tooManyFileImports.text, FILE_IMPORT_RETRY_SEC),
  tooManyExports: () => retryAfter('tooManyExports', API_ERRORS.tooManyExports.text, EXPORT_RETRY_SEC),
  keyCap: (cap: number) => answer('keyCap', API_ERRORS.keyCap.text(cap)),
  headersTooLarge: () => plain('headersTooLarge'),
  /** `requestId`: none where the request's id is not at hand (Bull Board's own error handler) */
  internal: (requestId?: string) => plain('internal', requestId === undefined ? {} : { request_id: requestId }),
  serviceUnavailable: () => retryAfter('serviceUnavailable', API_ERRORS.serviceUnavailable.text, RETRY_SOON_SEC),
  overloaded: () => retryAfter('overloaded', API_ERRORS.overloaded.text, RETRY_SOON_SEC),
  /** `importId`: the import recorded as having written nothing (none for a dry run) */
  workersUnavailable: (importId?: string) =>
    retryAfter('workersUnavailable', API_ERRORS.workersUnavailable.text, WORKERS_UNAVAILABLE_RETRY_SEC, referenceTo(importId)),
  importFailed: (importId?: string) => retryAfter('importFailed', API_ERRORS.importFailed.text, RETRY_SOON_SEC, referenceTo(importId)),
  /** a file whose acceptance may have committed (its COMMIT's answer was lost): `Location` names the import to look up */
  importOutcomeUnknown: (importId: string) => retryAfter('importOutcomeUnknown', API_ERRORS.importOutcomeUnknown.text, RETRY_SOON_SEC, referenceTo(importId)),
  stillRunning: (requestId: string, importId?: string) => {
    const { fields, headers } = referenceTo(importId);
    return answer('stillRunning', API_ERRORS.stillRunning.text, { request_id: requestId, ...fields }, headers);
  },
} satisfies Record<ApiErrorKind | 'rateLimited', (...args: never[]) => ApiError>;

