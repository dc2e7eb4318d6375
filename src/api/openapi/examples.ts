import { ApiError } from '../../shared/errors/api-error.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import { SHOWN_ONCE_NOTE } from '../../shared/api-schemas/api-keys.js';
import { IMPORT_KINDS, type ImportKind } from '../../shared/import/import-kinds.js';
import { checkImportBody } from '../import/check-import-body.js';
import { isImportRefusal } from '../import/import-refusal.js';
import { importRefusalError } from '../import/import-error-replies.js';
import { ChangeKeyBodySchema, CreateKeyBodySchema, keyBodyProblemsOf, keyRequestRefusal } from '../../shared/access/key-request.js';
import { ACTIVE_KEY_CAP } from '../../shared/repositories/api-keys.js';
import type { Example, Examples } from './route-schema.js';

/**
 * The document's examples. Where the code computes a body (row reasons, envelope and key-body
 * errors, the 402 body), the example is computed by that code, so it cannot drift from it.
 */

export const example = (summary: string, value: unknown, description?: string): Example =>
  description === undefined ? { summary, value } : { summary, description, value };

const REQUEST_ID = '0b9e8f3c-6a51-4f0e-9a8e-3f5b2d7c1a44';
export const IMPORT_ID = '0b6f2c1e-3d4a-4f8e-9c7f-5a1e0d9b8c76';
const ACCOUNT_ID = '3f2b6c1e-2d4a-4b8e-9c7f-5a1e0d9b8c76';
const KEY_ID = '7c9e6679-7425-40de-944b-e07fc1f90ae7';
const KEY_PREFIX = '4f1c9a2e';

const BAD_REQUEST = example('A request the framework cannot read (a Content-Length that does not match the body, say)', apiErrors.badRequest().body);

export const ROW_EXAMPLES = {
  machines: {
    valid: {
      template_id: 'prusa-mk4',
      category: 'fdm',
      manufacturer: 'Prusa Research',
      model: 'MK4',
      nickname: 'Left bench',
      capabilities: ['pla', 'petg'],
    },
    invalid: { template_id: 'bambu-x1c', category: ' ', manufacturer: 'Bambu Lab', model: 'X1 Carbon', is_skill_station: 'yes' },
  },
  listings: {
    valid: {
      title: 'Articulated dragon',
      description: 'Silk PLA, hand finished.',
      price_cents: 2500,
      currency: 'USD',
      category: 'miniatures',
      material: 'PLA',
      photo_urls: ['https://cdn.example.com/dragon.jpg', 'https://cdn.example.com/dragon-2.jpg'],
      tags: ['dragon', 'flexi'],
    },
    invalid: {
      title: 'Spiral vase',
      description: 'Vase mode, 0.6 mm nozzle.',
      price_cents: 12.5,
      currency: 'EUR',
      category: 'home_decor',
      material: 'PETG',
      photo_urls: ['http://cdn.example.com/vase.jpg'],
    },
  },
} as const satisfies Record<ImportKind, { valid: object; invalid: object }>;

/**
 * The bulk request examples: tools replay them as requests the service answers 201. A row that
 * fails its checks is such a request too (it is skipped and reported, the others are written);
 * what it gets is shown by the 201 and 400 examples (bulkResultExamples, bulkBadRequestExamples).
 */
export function bulkBodyExamples(kind: ImportKind): Examples {
  const { valid, invalid } = ROW_EXAMPLES[kind];
  return {
    valid: example('One valid row', { [kind]: [valid] }),
    someInvalid: example('A valid row and one that fails', { [kind]: [valid, invalid] }, 'Answered 201: the first row is written, the second skipped and reported in `errors` (the answer `withErrors` shows).'),
  };
}

/** The 400 body of a bulk body checkImportBody refuses. */
function refusalBodyOf(kind: ImportKind, body: unknown): ApiError['body'] {
  const checked = checkImportBody(kind, body);
  if (!isImportRefusal(checked)) throw new Error('example: expected a refused body');
  return importRefusalError(checked).body;
}

export function bulkResultExamples(kind: ImportKind): Examples {
  const { valid, invalid } = ROW_EXAMPLES[kind];
  const mixed = checkImportBody(kind, { [kind]: [valid, invalid] });
  if (isImportRefusal(mixed)) throw new Error('example: expected a row accepted and a row skipped');
  return {
    withErrors: example(
      'A row skipped',
      { inserted: mixed.rows.length, skipped: mixed.errors.length, errors: mixed.errors, import_id: IMPORT_ID },
      `The answer to \`${JSON.stringify({ [kind]: [valid, invalid] })}\`: the first row is created, the second skipped and reported.`,
    ),
    allInserted: example('Every row created', { inserted: 1, skipped: 0, errors: [], import_id: IMPORT_ID }),
  };
}

export function bulkBadRequestExamples(kind: ImportKind): Examples {
  const { maxRows } = IMPORT_KINDS[kind];
  const { invalid } = ROW_EXAMPLES[kind];
  return {
    noValidRows: example('No valid row', refusalBodyOf(kind, { [kind]: [invalid] })),
    tooManyRows: example('Too many rows', refusalBodyOf(kind, { [kind]: new Array<object>(maxRows + 1).fill({}) })),
    noRows: example('Empty array', refusalBodyOf(kind, { [kind]: [] })),
    wrongShape: example('Not an object with the array', refusalBodyOf(kind, [invalid])),
    invalidJson: example('Not JSON, or not UTF-8', apiErrors.invalidJson().body),
    idempotencyKey: example('Malformed Idempotency-Key', apiErrors.idempotencyKeyMalformed().body),
    badRequest: BAD_REQUEST,
  };
}

/** The 400 body of a key-creation body the route's schema refuses. */
function keyRefusalBodyOf(body: unknown): ApiError['body'] {
  const parsed = CreateKeyBodySchema.safeParse(body);
  if (parsed.success) throw new Error('example: expected a refused key-creation body');
  return keyRequestRefusal(keyBodyProblemsOf(parsed.error.issues)).body;
}

export const CREATE_KEY_BODY_EXAMPLES: Examples = {
  create: example('A key for the bulk endpoints', { label: 'ERP sync', scopes: ['listings:write'] }),
  restricted: example(
    'A key that expires and works only from the partner\'s addresses',
    { label: 'Contractor migration', scopes: ['listings:write'], expires_at: '2027-03-01T00:00:00Z', allowed_ips: ['203.0.113.0/24', '2001:db8:4::/48'] },
    '`expires_at` is 60 seconds to 1,096 days ahead; `allowed_ips` holds 1 to 20 addresses or CIDR blocks.',
  ),
};

/** The 400 body of a key change the route's schema refuses. */
function keyChangeRefusalBodyOf(body: unknown): ApiError['body'] {
  const parsed = ChangeKeyBodySchema.safeParse(body);
  if (parsed.success) throw new Error('example: expected a refused key change');
  return keyRequestRefusal(keyBodyProblemsOf(parsed.error.issues), apiErrors.keyChangeEnvelope).body;
}

export const CHANGE_KEY_BODY_EXAMPLES: Examples = {
  restrict: example('Allow only these addresses', { allowed_ips: ['203.0.113.0/24', '198.51.100.7'] }),
  unrestrict: example('Allow every address again', { allowed_ips: null }),
  relabel: example('A new label', { label: 'ERP sync (eu-west)' }),
};

export const CHANGE_KEY_BAD_REQUEST_EXAMPLES: Examples = {
  badAddress: example('An entry that is not an address or block', keyChangeRefusalBodyOf({ allowed_ips: ['203.0.113.300'] })),
  emptyList: example('An empty list (send null for any address)', keyChangeRefusalBodyOf({ allowed_ips: [] })),
  label: example('An empty label', keyChangeRefusalBodyOf({ label: ' ' })),
  notAnObject: example('Not an object', keyChangeRefusalBodyOf(['203.0.113.9'])),
  invalidJson: example('Not JSON, or not UTF-8', apiErrors.invalidJson().body),
  badRequest: BAD_REQUEST,
};

export const ROLL_KEY_BODY_EXAMPLES: Examples = {
  week: example('The old key works for 7 more days', { expires_in_sec: 604_800 }),
  now: example('The old key ends at once', { expires_in_sec: 0 }),
};

export const CREATE_KEY_BAD_REQUEST_EXAMPLES: Examples = {
  label: example('Missing label', keyRefusalBodyOf({ scopes: ['listings:write'] })),
  noScope: example('No scope', keyRefusalBodyOf({ label: 'ERP sync', scopes: [] })),
  unknownScope: example('Unknown scope', keyRefusalBodyOf({ label: 'ERP sync', scopes: ['listing:write'] })),
  expiresAt: example('expires_at in the past, or too far ahead', keyRefusalBodyOf({ label: 'ERP sync', scopes: ['listings:write'], expires_at: '2020-01-01T00:00:00Z' })),
  allowedIps: example('An entry that is not an address or block', keyRefusalBodyOf({ label: 'ERP sync', scopes: ['listings:write'], allowed_ips: ['203.0.113.0/33'] })),
  notAnObject: example('Not an object', keyRefusalBodyOf(['ERP sync'])),
  invalidJson: example('Not JSON, or not UTF-8', apiErrors.invalidJson().body),
  badRequest: BAD_REQUEST,
};

const CREATED_AT = '2026-11-22T09:30:00.000Z';

export const ME_EXAMPLES: Examples = {
  account: example('The account and key in use', {
    id: ACCOUNT_ID,
    display_name: 'Acme Prints',
    subscription_tier: 'enterprise',
    is_owner: true,
    has_completed_onboarding: true,
    key: { prefix: KEY_PREFIX, scopes: ['listings:write'], expires_at: null, allowed_ips: ['203.0.113.0/24'] },
  }),
};

const OLD_KEY_ID = '16fd2706-8baf-433b-82eb-8c7fada847da';
const OLD_KEY_PREFIX = '9a0b1c2d';
const LISTED_KEY = {
  id: KEY_ID,
  label: 'ERP sync',
  key_prefix: KEY_PREFIX,
  scopes: ['listings:write'],
  is_revoked: false,
  status: 'active',
  expires_at: null,
  allowed_ips: ['203.0.113.0/24'],
  last_used_at: '2026-11-22T10:02:11.000Z',
  created_at: CREATED_AT,
};

export const KEY_LIST_EXAMPLES: Examples = {
  keys: example('Three keys: active, rolled (ending), revoked', {
    keys: [
      LISTED_KEY,
      { ...LISTED_KEY, id: OLD_KEY_ID, key_prefix: OLD_KEY_PREFIX, expires_at: '2026-11-23T09:30:00.000Z', last_used_at: '2026-11-22T09:29:40.000Z', created_at: '2026-08-24T08:00:00.000Z' },
      { id: 'b3f1e8a0-3c1d-4d2e-9f6a-1a2b3c4d5e6f', label: 'Old sync', key_prefix: '5e6f7a8b', scopes: ['listings:write', 'jobs:read'], is_revoked: true, status: 'revoked', expires_at: null, allowed_ips: null, last_used_at: null, created_at: '2026-06-01T08:00:00.000Z' },
    ],
  }),
};

const CREATED_KEY = {
  key: `svc_live_${KEY_PREFIX}_0123456789abcdef0123456789abcdef`,
  metadata: { id: KEY_ID, label: 'ERP sync', key_prefix: KEY_PREFIX, scopes: ['listings_write'], created_at: CREATED_AT },
  note: SHOWN_ONCE_NOTE,
  expires_at: null,
  allowed_ips: null,
};

export const CREATED_KEY_EXAMPLES: Examples = {
  created: example('The full key, shown once', CREATED_KEY),
  restricted: example('A key that expires and works only from some addresses', {
    ...CREATED_KEY,
    expires_at: '2027-03-01T00:00:00.000Z',
    allowed_ips: ['203.0.113.0/24', '2001:db8:4::/48'],
  }),
};

export const ROLLED_KEY_EXAMPLES: Examples = {
  rolled: example('The new key, shown once; the old one works a day more', {
    ...CREATED_KEY,
    allowed_ips: ['203.0.113.0/24'],
    rolled: { id: OLD_KEY_ID, key_prefix: OLD_KEY_PREFIX, expires_at: '2026-11-23T09:30:00.000Z' },
  }),
};

export const CHANGED_KEY_EXAMPLES: Examples = {
  changed: example('The key as listed, after the change', LISTED_KEY),
};

export const REVOKED_KEY_EXAMPLES: Examples = {
  revoked: example('Revoked (also when it already was)', { revoked: { id: KEY_ID, key_prefix: KEY_PREFIX, is_revoked: true } }),
};

export const HEALTH_EXAMPLES = {
  ok: example('Up', { status: 'ok', version: '0.1.0', uptime_sec: 3600, checks: { postgres: 'ok', redis: 'ok' }, timestamp: '2026-11-22T10:00:00.000Z' }),
  degraded: example('A dependency is down', { status: 'degraded', version: '0.1.0', uptime_sec: 3600, checks: { postgres: 'ok', redis: 'down' }, timestamp: '2026-11-22T10:00:00.000Z' }),
} satisfies Examples;

/** Error bodies every route shares, by the condition that produces them. */
export const ERROR_EXAMPLES = {
  apiKeyMissing: example('No or malformed key', apiErrors.apiKeyMissing().body),
  apiKeyInvalid: example('Unknown or revoked key', apiErrors.apiKeyInvalid().body),
  apiKeyExpired: example('The key expired (its expires_at, or the end of a roll\'s grace period)', apiErrors.apiKeyExpired().body),
  ipNotAllowed: example('The key does not work from this client address', apiErrors.ipNotAllowed().body),
  keyNotRollable: example('Revoked, expired or already rolled', apiErrors.keyNotRollable().body),
  keyEnded: example('Revoked or expired', apiErrors.keyEnded().body),
  rollBody: example('expires_in_sec out of range, or the body is not an object', apiErrors.rollBodyMalformed().body),
  sessionMissing: example('No or malformed session token', apiErrors.sessionMissing().body),
  sessionInvalid: example('Bad signature, expired, or unknown account', apiErrors.sessionInvalid().body),
  tier: example('Not on Enterprise or Global', apiErrors.tierRequired('pro', 'https://example.com/pricing').body),
  scope: example('The key lacks the scope', apiErrors.scopeMissing('listings_write').body),
  origin: example('A browser request from another origin', apiErrors.originRefused().body),
  rateMinute: example('Per-minute limit reached', apiErrors.rateLimited('per-minute', 42).body),
  rateDay: example('Per-day limit reached', apiErrors.rateLimited('per-day', 38_211).body),
  lockout: example('This IP is locked out after failed authentications', apiErrors.lockedOut(873).body),
  keyCap: example('Active key limit reached', apiErrors.keyCap(ACTIVE_KEY_CAP).body),
  keyNotFound: example('Not one of the account\'s keys', apiErrors.keyNotFound().body),
  unsupportedMediaType: example('Not application/json', apiErrors.unsupportedMediaType().body),
  idempotencyConflict: example('Key reused with another body', apiErrors.idempotencyKeyReused().body),
  storeUnavailable: example('A dependency is unavailable; nothing was written', apiErrors.serviceUnavailable().body),
  workersUnavailable: example('No worker took the import; nothing was written', apiErrors.workersUnavailable(IMPORT_ID).body),
  importFailed: example('The import failed; nothing was written', apiErrors.importFailed(IMPORT_ID).body),
  importOutcomeUnknown: example('The file may have been accepted: look it up', apiErrors.importOutcomeUnknown(IMPORT_ID).body),
  stillRunning: example('Outcome not known yet', apiErrors.stillRunning(REQUEST_ID, IMPORT_ID).body),
  internal: example('Unexpected failure', apiErrors.internal(REQUEST_ID).body),
  tooManyConcurrent: example('The account has ACCOUNT_MAX_IN_FLIGHT imports in flight', apiErrors.tooManyConcurrent().body),
  overloaded: example('This API process is overloaded; nothing was written', apiErrors.overloaded().body),
  badRequest: BAD_REQUEST,
  urlTooLong: example('A path parameter over 100 characters', apiErrors.urlTooLong().body, 'Answered before the route is reached; no id the service issues is that long.'),
} satisfies Examples;

export function tooLargeExample(limitBytes: number): Example {
  return example(`Body over ${limitBytes.toLocaleString('en-US')} bytes`, apiErrors.bodyTooLarge(limitBytes).body);
}
