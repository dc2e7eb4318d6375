import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { API_ERROR_CODES, API_ERRORS, apiErrors, type ApiErrorKind } from '../../../src/shared/errors/api-errors.js';

/**
 * Every kind of the catalogue pinned to its status, code and text. note: a code is published the
 * day it ships and never changes meaning (docs/errors.md#codes): changing one here is a breaking
 * change for every partner who switches on it, never a refactoring.
 */
const PINNED: [ApiErrorKind, number, string, string][] = [
  ['invalidJson', 400, 'invalid_json', 'Invalid JSON body'],
  ['bulkEnvelope', 400, 'missing_rows_array', 'Body must be an object with a "listings" array'],
  ['entriesEnvelope', 400, 'missing_entries_array', 'Body must be an object with either an "external_ids" or an "ids" array'],
  ['noRows', 400, 'no_rows', 'No rows: send 1 to 200 listings'],
  ['tooManyRows', 400, 'too_many_rows', 'Too many rows: at most 500 machines per request'],
  ['noValidRows', 400, 'no_valid_rows', 'no valid rows'],
  ['importKindMalformed', 400, 'invalid_import_kind', 'kind must be listings or machines'],
  ['fileEmpty', 400, 'file_empty', 'The file holds no rows'],
  ['fileNotUtf8', 400, 'file_not_utf8', 'The file is not UTF-8 text'],
  ['fileUnreadable', 400, 'file_unreadable', 'The file cannot be read: line 2 has 3 cells'],
  ['fileTooManyRows', 400, 'file_too_many_rows', 'Too many rows: at most 1000000 per file'],
  ['keyEnvelope', 400, 'key_body_not_object', 'Body must be an object with "label" and "scopes"'],
  ['keyChangeEnvelope', 400, 'key_change_not_object', 'Body must be an object with "label" or "allowed_ips"'],
  ['rollBodyMalformed', 400, 'invalid_expires_in_sec', 'Body must be empty or an object whose expires_in_sec is a whole number from 0 to 604800'],
  ['keyBody', 400, 'invalid_key_fields', 'label: required, 1 to 80 characters'],
  ['unknownScope', 400, 'unknown_scope', 'scopes: unknown scope "listing:write"; valid scopes: listings:write, jobs:read'],
  ['idempotencyKeyMalformed', 400, 'invalid_idempotency_key', 'Idempotency-Key must be 1 to 255 printable ASCII characters'],
  ['dryRunMalformed', 400, 'invalid_dry_run', 'dry_run must be true or false'],
  ['updateMalformed', 400, 'invalid_update', 'update must be replace or merge'],
  ['returnMalformed', 400, 'invalid_return', 'return must be rows'],
  ['modeMalformed', 400, 'invalid_mode', 'mode must be upsert or mirror'],
  ['missingMalformed', 400, 'invalid_missing', 'missing must be archive or delete'],
  ['maxRemovalMalformed', 400, 'invalid_max_removal', 'max_removal must be a whole number from 0 to 100'],
  ['removalWithoutMirror', 400, 'removal_without_mirror', 'missing and max_removal apply only with mode=mirror'],
  ['dryRunWithIdempotencyKey', 400, 'dry_run_with_idempotency_key', 'Idempotency-Key cannot be used with dry_run=true: a dry run writes nothing to replay'],
  ['unknownQueryParameter', 400, 'unknown_query_parameter', 'Unknown query parameter: dryRun'],
  ['pageLimitMalformed', 400, 'invalid_limit', 'limit must be a whole number from 1 to 100'],
  ['startingAfterUnknown', 400, 'unknown_starting_after', 'starting_after: no such import'],
  ['keyStartingAfterUnknown', 400, 'unknown_key_starting_after', 'starting_after: no such key'],
  ['startingAfterMalformed', 400, 'invalid_starting_after', 'starting_after must be a row index (a whole number from 0)'],
  ['keyStatusMalformed', 400, 'invalid_key_status', 'status must be active, expired, revoked or all'],
  ['rowStartingAfterMalformed', 400, 'invalid_row_starting_after', 'starting_after must be the id of a row (a UUID)'],
  ['externalIdFilterMalformed', 400, 'invalid_external_id', 'external_id must be 1 to 100 printable characters'],
  ['updatedSinceMalformed', 400, 'invalid_updated_since', 'updated_since must be an ISO 8601 date and time with a time zone, e.g. 2026-11-24T02:00:00Z'],
  ['archivedMalformed', 400, 'invalid_archived', 'archived must be true or false'],
  ['exportFormatMalformed', 400, 'invalid_export_format', 'format must be ndjson or csv'],
  ['malformedUrl', 400, 'malformed_url', 'Malformed request URL'],
  ['badRequest', 400, 'bad_request', 'Bad request'],
  ['apiKeyMissing', 401, 'missing_api_key', 'Missing or malformed API key'],
  ['apiKeyInvalid', 401, 'invalid_api_key', 'Invalid API key'],
  ['apiKeyExpired', 401, 'api_key_expired', 'Invalid API key'],
  ['sessionMissing', 401, 'missing_session_token', 'Missing or malformed session token'],
  ['sessionInvalid', 401, 'invalid_session_token', 'Invalid session token'],
  ['adminAuthRequired', 401, 'admin_auth_required', 'Authentication required'],
  ['tierRequired', 402, 'subscription_required', 'API access requires an Enterprise or Global subscription'],
  ['scopeMissing', 403, 'missing_scope', 'Missing required scope: listings_write'],
  ['originRefused', 403, 'origin_not_allowed', 'Cross-origin requests are not allowed'],
  ['ipNotAllowed', 403, 'ip_not_allowed', 'API key not allowed from this address'],
  ['keyNotFound', 404, 'api_key_not_found', 'API key not found'],
  ['notFound', 404, 'not_found', 'Not found'],
  ['importNotFound', 404, 'import_not_found', 'Import not found'],
  ['listingNotFound', 404, 'listing_not_found', 'Listing not found'],
  ['machineNotFound', 404, 'machine_not_found', 'Machine not found'],
  ['methodNotAllowed', 405, 'method_not_allowed', 'Method not allowed'],
  ['requestTimeout', 408, 'request_timeout', 'Request timeout'],
  ['bodyTooLarge', 413, 'body_too_large', 'Request body too large'],
  ['urlTooLong', 414, 'url_too_long', 'Request URL too long'],
  ['unsupportedMediaType', 415, 'unsupported_media_type', 'Content-Type must be application/json'],
  ['fileMediaType', 415, 'unsupported_file_media_type', 'Content-Type must be application/x-ndjson or text/csv'],
  ['keyNotRollable', 409, 'api_key_not_rollable', 'API key cannot be rolled: it is revoked, expired or already rolled'],
  ['keyEnded', 409, 'api_key_ended', 'API key is revoked or expired'],
  ['idempotencyKeyReused', 422, 'idempotency_key_reused', 'Idempotency-Key was already used with a different request body'],
  ['rateLimitedMinute', 429, 'rate_limited_minute', 'Rate limit exceeded (per-minute)'],
  ['rateLimitedDay', 429, 'rate_limited_day', 'Rate limit exceeded (per-day)'],
  ['lockedOut', 429, 'locked_out', 'Too many failed authentication attempts'],
  ['tooManyConcurrent', 429, 'too_many_concurrent_requests', 'Too many concurrent requests'],
  ['tooManyFileImports', 429, 'too_many_file_imports', 'Too many file imports in progress'],
  ['tooManyExports', 429, 'too_many_exports', 'An export of this account is already running'],
  ['keyCap', 429, 'active_key_limit', 'Active key limit reached (20); revoke a key first'],
  ['headersTooLarge', 431, 'headers_too_large', 'Request headers too large'],
  ['internal', 500, 'internal_error', 'Internal server error'],
  ['serviceUnavailable', 503, 'service_unavailable', 'Service temporarily unavailable'],
  ['overloaded', 503, 'overloaded', 'Service overloaded, retry shortly'],
  ['workersUnavailable', 503, 'workers_unavailable', 'Import workers unavailable; nothing was written'],
  ['importFailed', 503, 'import_failed', 'Import failed; nothing was written'],
  ['importOutcomeUnknown', 503, 'import_outcome_unknown', 'Import may have been accepted; look it up before sending it again'],
  ['stillRunning', 504, 'import_still_running', 'Import is still running; check before retrying'],
];

/** Each factory called as its callers call it, for the texts above. */
const BUILT: Record<ApiErrorKind, () => { statusCode: number; body: { error: string; code: string } }> = {
  invalidJson: () => apiErrors.invalidJson(),
  bulkEnvelope: () => apiErrors.bulkEnvelope('listings'),
  entriesEnvelope: () => apiErrors.entriesEnvelope(),
  noRows: () => apiErrors.noRows('listings', 200),
  tooManyRows: () => apiErrors.tooManyRows('machines', 500, 501),
  noValidRows: () => apiErrors.noValidRows([]),
  importKindMalformed: () => apiErrors.importKindMalformed(),
  fileEmpty: () => apiErrors.fileEmpty(),
  fileNotUtf8: () => apiErrors.fileNotUtf8(),
  fileUnreadable: () => apiErrors.fileUnreadable('line 2 has 3 cells'),
  fileTooManyRows: () => apiErrors.fileTooManyRows(1_000_000),
  keyEnvelope: () => apiErrors.keyEnvelope(),
  keyChangeEnvelope: () => apiErrors.keyChangeEnvelope(),
  rollBodyMalformed: () => apiErrors.rollBodyMalformed(),
  keyBody: () => apiErrors.keyBody('label: required, 1 to 80 characters'),
  unknownScope: () => apiErrors.unknownScope('listing:write', ['listings:write', 'jobs:read']),
  idempotencyKeyMalformed: () => apiErrors.idempotencyKeyMalformed(),
  dryRunMalformed: () => apiErrors.dryRunMalformed(),
  updateMalformed: () => apiErrors.updateMalformed(),
  returnMalformed: () => apiErrors.returnMalformed(),
  modeMalformed: () => apiErrors.modeMalformed(),
  missingMalformed: () => apiErrors.missingMalformed(),
  maxRemovalMalformed: () => apiErrors.maxRemovalMalformed(),
  removalWithoutMirror: () => apiErrors.removalWithoutMirror(),
  dryRunWithIdempotencyKey: () => apiErrors.dryRunWithIdempotencyKey(),
  unknownQueryParameter: () => apiErrors.unknownQueryParameter('dryRun'),
  pageLimitMalformed: () => apiErrors.pageLimitMalformed(100),
  startingAfterUnknown: () => apiErrors.startingAfterUnknown(),
  keyStartingAfterUnknown: () => apiErrors.keyStartingAfterUnknown(),
  startingAfterMalformed: () => apiErrors.startingAfterMalformed(),
  keyStatusMalformed: () => apiErrors.keyStatusMalformed(),
  rowStartingAfterMalformed: () => apiErrors.rowStartingAfterMalformed(),
  externalIdFilterMalformed: () => apiErrors.externalIdFilterMalformed(),
  updatedSinceMalformed: () => apiErrors.updatedSinceMalformed(),
  archivedMalformed: () => apiErrors.archivedMalformed(),
  exportFormatMalformed: () => apiErrors.exportFormatMalformed(),
  malformedUrl: () => apiErrors.malformedUrl(),
  badRequest: () => apiErrors.badRequest(),
  apiKeyMissing: () => apiErrors.apiKeyMissing(),
  apiKeyInvalid: () => apiErrors.apiKeyInvalid(),
  apiKeyExpired: () => apiErrors.apiKeyExpired(),
  sessionMissing: () => apiErrors.sessionMissing(),
  sessionInvalid: () => apiErrors.sessionInvalid(),
  adminAuthRequired: () => apiErrors.adminAuthRequired(),
  tierRequired: () => apiErrors.tierRequired('pro', 'https://example.test/upgrade'),
  scopeMissing: () => apiErrors.scopeMissing('listings_write'),
  originRefused: () => apiErrors.originRefused(),
  ipNotAllowed: () => apiErrors.ipNotAllowed(),
  keyNotFound: () => apiErrors.keyNotFound(),
  notFound: () => apiErrors.notFound(),
  importNotFound: () => apiErrors.importNotFound(),
  listingNotFound: () => apiErrors.listingNotFound(),
  machineNotFound: () => apiErrors.machineNotFound(),
  methodNotAllowed: () => apiErrors.methodNotAllowed(['GET', 'HEAD']),
  requestTimeout: () => apiErrors.requestTimeout(),
  bodyTooLarge: () => apiErrors.bodyTooLarge(1_048_576),
  urlTooLong: () => apiErrors.urlTooLong(),
  unsupportedMediaType: () => apiErrors.unsupportedMediaType(),
  fileMediaType: () => apiErrors.fileMediaType(),
  keyNotRollable: () => apiErrors.keyNotRollable(),
  keyEnded: () => apiErrors.keyEnded(),
  idempotencyKeyReused: () => apiErrors.idempotencyKeyReused(),
  rateLimitedMinute: () => apiErrors.rateLimitedMinute(42),
  rateLimitedDay: () => apiErrors.rateLimitedDay(42),
  lockedOut: () => apiErrors.lockedOut(900),
  tooManyConcurrent: () => apiErrors.tooManyConcurrent(),
  tooManyFileImports: () => apiErrors.tooManyFileImports(),
  tooManyExports: () => apiErrors.tooManyExports(),
  keyCap: () => apiErrors.keyCap(20),
  headersTooLarge: () => apiErrors.headersTooLarge(),
  internal: () => apiErrors.internal('req-1'),
  serviceUnavailable: () => apiErrors.serviceUnavailable(),
  overloaded: () => apiErrors.overloaded(),
  workersUnavailable: () => apiErrors.workersUnavailable('imp-1'),
  importFailed: () => apiErrors.importFailed('imp-1'),
  importOutcomeUnknown: () => apiErrors.importOutcomeUnknown('imp-1'),
  stillRunning: () => apiErrors.stillRunning('req-1', 'imp-1'),
};

describe('the error catalogue (API_ERRORS)', () => {
  it.each(PINNED)('%s: %i %s "%s"', (kind, status, code, text) => {
    expect(API_ERRORS[kind].status).toBe(status);
    expect(API_ERRORS[kind].code).toBe(code);
    const built = BUILT[kind]();
    expect(built.statusCode).toBe(status);
    expect(built.body.code).toBe(code);
    expect(built.body.error).toBe(text);
  });

  it('pins every kind above (a new kind needs its row, and its code its place in docs/errors.md)', () => {
    expect(PINNED.map(([kind]) => kind).sort()).toEqual(Object.keys(API_ERRORS).sort());
  });

  it('gives every kind a code of its own, in snake_case', () => {
    expect(new Set(API_ERROR_CODES).size).toBe(Object.keys(API_ERRORS).length);
    for (const code of API_ERROR_CODES) expect(code).toMatch(/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/);
  });

  it('tells the three kinds of 429 a partner waits out apart, and the 503s', () => {
    const codesOf = (status: number) => Object.values(API_ERRORS).filter((entry) => entry.status === status).map((entry) => entry.code);
    expect(codesOf(429)).toEqual(expect.arrayContaining(['rate_limited_minute', 'rate_limited_day', 'too_many_concurrent_requests', 'locked_out']));
    expect(new Set(codesOf(503)).size).toBe(5);
    expect(new Set(codesOf(400)).size).toBe(codesOf(400).length);
  });

  it.each([
    ['per-minute', 'rate_limited_minute', 'Rate limit exceeded (per-minute)'],
    ['per-day', 'rate_limited_day', 'Rate limit exceeded (per-day)'],
  ] as const)('rateLimited(%s) is the 429 of that window: %s', (window, code, text) => {
    const refusal = apiErrors.rateLimited(window, 17);
    expect(refusal.statusCode).toBe(429);
    expect(refusal.body).toEqual({ error: text, code, retry_after_sec: 17 });
    expect(refusal.headers).toEqual({ 'retry-after': '17' });
  });

  it('lists every code, with its status and text, in docs/errors.md#codes', () => {
    const doc = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');
    for (const [, status, code, text] of PINNED) {
      const row = doc.split('\n').find((line) => line.startsWith(`| ${status} | \`${code}\` |`));
      expect(row, code).toBeDefined();
      // texts that carry a value are shown with a placeholder or an example of it
      if (!/\d{2,}|:|"/.test(text) || text === API_ERRORS.lockedOut.text) expect(row, code).toContain(`\`${text}\``);
    }
  });

  it('puts the code second, after the text, in every body', () => {
    for (const build of Object.values(BUILT)) expect(Object.keys(build().body).slice(0, 2)).toEqual(['error', 'code']);
  });
});
