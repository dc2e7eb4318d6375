import { ApiError, retryAfterHeaders } from './api-error.js';
import type { RowError } from '../rows/row-errors.js';
import { echoedText } from './echoed-text.js';
import { importLocation } from '../import/import-location.js';

/**
 * Every error the API answers, in one table: its status and its text (docs/ and the OpenAPI
 * document show the same). The factories below build each one; nothing else constructs an
 * ApiError. note: texts that carry a value are functions of it.
 */
export const API_ERRORS = {
  invalidJson: { status: 400, text: 'Invalid JSON body' },
  bulkEnvelope: { status: 400, text: (kind: string) => `Body must be an object with a "${kind}" array` },
  noRows: { status: 400, text: (kind: string, maxRows: number) => `No rows: send 1 to ${maxRows} ${kind}` },
  tooManyRows: { status: 400, text: (kind: string, maxRows: number) => `Too many rows: at most ${maxRows} ${kind} per request` },
  noValidRows: { status: 400, text: 'no valid rows' },
  importKindMalformed: { status: 400, text: 'kind must be listings or machines' },
  fileEmpty: { status: 400, text: 'The file holds no rows' },
  fileNotUtf8: { status: 400, text: 'The file is not UTF-8 text' },
  fileUnreadable: { status: 400, text: (problem: string) => `The file cannot be read: ${problem}` },
  fileTooManyRows: { status: 400, text: (maxRows: number) => `Too many rows: at most ${maxRows} per file` },
  keyEnvelope: { status: 400, text: 'Body must be an object with "label" and "scopes"' },
  keyBody: { status: 400, text: (problems: string) => problems },
  unknownScope: { status: 400, text: (scope: string, valid: readonly string[]) => `scopes: unknown scope "${scope}"; valid scopes: ${valid.join(', ')}` },
  idempotencyKeyMalformed: { status: 400, text: 'Idempotency-Key must be 1 to 255 printable ASCII characters' },
  dryRunMalformed: { status: 400, text: 'dry_run must be true or false' },
  dryRunWithIdempotencyKey: { status: 400, text: 'Idempotency-Key cannot be used with dry_run=true: a dry run writes nothing to replay' },
  unknownQueryParameter: { status: 400, text: (name: string) => `Unknown query parameter: ${name}` },
  pageLimitMalformed: { status: 400, text: (max: number) => `limit must be a whole number from 1 to ${max}` },
  startingAfterUnknown: { status: 400, text: 'starting_after: no such import' },
  startingAfterMalformed: { status: 400, text: 'starting_after must be a row index (a whole number from 0)' },
  malformedUrl: { status: 400, text: 'Malformed request URL' },
  badRequest: { status: 400, text: 'Bad request' },
  apiKeyMissing: { status: 401, text: 'Missing or malformed API key' },
  apiKeyInvalid: { status: 401, text: 'Invalid API key' },
  sessionMissing: { status: 401, text: 'Missing or malformed session token' },
  sessionInvalid: { status: 401, text: 'Invalid session token' },
  adminAuthRequired: { status: 401, text: 'Authentication required' },
  tierRequired: { status: 402, text: 'API access requires an Enterprise or Global subscription' },
  scopeMissing: { status: 403, text: (scope: string) => `Missing required scope: ${scope}` },
  originRefused: { status: 403, text: 'Cross-origin requests are not allowed' },
  keyNotFound: { status: 404, text: 'API key not found' },
  notFound: { status: 404, text: 'Not found' },
  importNotFound: { status: 404, text: 'Import not found' },
  requestTimeout: { status: 408, text: 'Request timeout' },
  bodyTooLarge: { status: 413, text: 'Request body too large' },
  urlTooLong: { status: 414, text: 'Request URL too long' },
  unsupportedMediaType: { status: 415, text: 'Content-Type must be application/json' },
  fileMediaType: { status: 415, text: 'Content-Type must be application/x-ndjson or text/csv' },
  idempotencyKeyReused: { status: 422, text: 'Idempotency-Key was already used with a different request body' },
  rateLimited: { status: 429, text: (window: string) => `Rate limit exceeded (${window})` },
  lockedOut: { status: 429, text: 'Too many failed authentication attempts' },
  tooManyConcurrent: { status: 429, text: 'Too many concurrent requests' },
  tooManyFileImports: { status: 429, text: 'Too many file imports in progress' },
  keyCap: { status: 429, text: (cap: number) => `Active key limit reached (${cap}); revoke a key first` },
  headersTooLarge: { status: 431, text: 'Request headers too large' },
  internal: { status: 500, text: 'Internal server error' },
  serviceUnavailable: { status: 503, text: 'Service temporarily unavailable' },
  overloaded: { status: 503, text: 'Service overloaded, retry shortly' },
  workersUnavailable: { status: 503, text: 'Import workers unavailable; nothing was written' },
  importFailed: { status: 503, text: 'Import failed; nothing was written' },
  stillRunning: { status: 504, text: 'Import is still running; check before retrying' },
} as const satisfies Record<string, { status: number; text: string | ((...args: never[]) => string) }>;

export type ApiErrorKind = keyof typeof API_ERRORS;

/** Seconds a 503 of an unavailable dependency or an overloaded process asks to wait. */
const RETRY_SOON_SEC = 5;
/** no worker took the import: workers are away for longer than a blip */
const WORKERS_UNAVAILABLE_RETRY_SEC = 30;
/** a slot of the in-flight cap frees within a request's time */
const CONCURRENCY_RETRY_SEC = 1;
/** a file import takes minutes: looking again in one is soon enough */
const FILE_IMPORT_RETRY_SEC = 60;

type TextKind = { [K in ApiErrorKind]: (typeof API_ERRORS)[K]['text'] extends string ? K : never }[ApiErrorKind];

/** The error of `kind` with the catalogue's status and `error` text (the kind's own, or one it built). */
const answer = (kind: ApiErrorKind, error: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  new ApiError(API_ERRORS[kind].status, { error, ...extra }, headers);

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
  noRows: (kind: string, maxRows: number) => answer('noRows', API_ERRORS.noRows.text(kind, maxRows)),
  tooManyRows: (kind: string, maxRows: number, received: number) => answer('tooManyRows', API_ERRORS.tooManyRows.text(kind, maxRows), { received }),
  noValidRows: (errors: RowError[]) => plain('noValidRows', { errors }),
  importKindMalformed: () => plain('importKindMalformed'),
  fileEmpty: () => plain('fileEmpty'),
  fileNotUtf8: () => plain('fileNotUtf8'),
  fileUnreadable: (problem: string) => answer('fileUnreadable', API_ERRORS.fileUnreadable.text(problem)),
  fileTooManyRows: (maxRows: number) => answer('fileTooManyRows', API_ERRORS.fileTooManyRows.text(maxRows)),
  keyEnvelope: () => plain('keyEnvelope'),
  keyBody: (problems: string) => answer('keyBody', API_ERRORS.keyBody.text(problems)),
  unknownScope: (scope: string, valid: readonly string[]) => answer('unknownScope', API_ERRORS.unknownScope.text(scope, valid)),
  idempotencyKeyMalformed: () => plain('idempotencyKeyMalformed'),
  dryRunMalformed: () => plain('dryRunMalformed'),
  dryRunWithIdempotencyKey: () => plain('dryRunWithIdempotencyKey'),
  /** `name` as the partner sent it; the text shows it through echoedText */
  unknownQueryParameter: (name: string) => answer('unknownQueryParameter', API_ERRORS.unknownQueryParameter.text(echoedText(name))),
  pageLimitMalformed: (max: number) => answer('pageLimitMalformed', API_ERRORS.pageLimitMalformed.text(max)),
  startingAfterUnknown: () => plain('startingAfterUnknown'),
  startingAfterMalformed: () => plain('startingAfterMalformed'),
  malformedUrl: () => plain('malformedUrl'),
  badRequest: () => plain('badRequest'),
  apiKeyMissing: () => plain('apiKeyMissing'),
  apiKeyInvalid: () => plain('apiKeyInvalid'),
  sessionMissing: () => plain('sessionMissing'),
  sessionInvalid: () => plain('sessionInvalid'),
  adminAuthRequired: () => plain('adminAuthRequired'),
  tierRequired: (currentTier: string, upgradeUrl: string) => plain('tierRequired', { current_tier: currentTier, upgrade_url: upgradeUrl }),
  scopeMissing: (scope: string) => answer('scopeMissing', API_ERRORS.scopeMissing.text(scope)),
  originRefused: () => plain('originRefused'),
  keyNotFound: () => plain('keyNotFound'),
  notFound: () => plain('notFound'),
  importNotFound: () => plain('importNotFound'),
  requestTimeout: () => plain('requestTimeout'),
  bodyTooLarge: (limitBytes: number | undefined) => plain('bodyTooLarge', { limit_bytes: limitBytes }),
  urlTooLong: () => plain('urlTooLong'),
  unsupportedMediaType: () => plain('unsupportedMediaType'),
  fileMediaType: () => plain('fileMediaType'),
  idempotencyKeyReused: () => plain('idempotencyKeyReused'),
  rateLimited: (window: string, retryAfterSec: number) => retryAfter('rateLimited', API_ERRORS.rateLimited.text(window), retryAfterSec),
  lockedOut: (retryAfterSec: number) => retryAfter('lockedOut', API_ERRORS.lockedOut.text, retryAfterSec),
  tooManyConcurrent: () => retryAfter('tooManyConcurrent', API_ERRORS.tooManyConcurrent.text, CONCURRENCY_RETRY_SEC),
  tooManyFileImports: () => retryAfter('tooManyFileImports', API_ERRORS.tooManyFileImports.text, FILE_IMPORT_RETRY_SEC),
  keyCap: (cap: number) => answer('keyCap', API_ERRORS.keyCap.text(cap)),
  headersTooLarge: () => plain('headersTooLarge'),
  internal: (requestId: string) => plain('internal', { request_id: requestId }),
  serviceUnavailable: () => retryAfter('serviceUnavailable', API_ERRORS.serviceUnavailable.text, RETRY_SOON_SEC),
  overloaded: () => retryAfter('overloaded', API_ERRORS.overloaded.text, RETRY_SOON_SEC),
  /** `importId`: the import recorded as having written nothing (none for a dry run) */
  workersUnavailable: (importId?: string) =>
    retryAfter('workersUnavailable', API_ERRORS.workersUnavailable.text, WORKERS_UNAVAILABLE_RETRY_SEC, referenceTo(importId)),
  importFailed: (importId?: string) => retryAfter('importFailed', API_ERRORS.importFailed.text, RETRY_SOON_SEC, referenceTo(importId)),
  stillRunning: (requestId: string, importId?: string) => {
    const { fields, headers } = referenceTo(importId);
    return answer('stillRunning', API_ERRORS.stillRunning.text, { request_id: requestId, ...fields }, headers);
  },
} satisfies Record<ApiErrorKind, (...args: never[]) => ApiError>;
