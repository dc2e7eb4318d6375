import { apiErrors } from '../../shared/errors/api-errors.js';
import { example } from './examples.js';
import type { Examples } from './route-schema.js';

/** The key list's paging examples (docs/endpoints.md#key-management), beside the plain list's in examples.ts. */

const ACTIVE_KEY = {
  id: '0d5a1f3e-8c2b-4e7d-9f60-3b1c2a4d5e6f',
  label: 'Warehouse sync',
  key_prefix: '7e3d2c1b',
  scopes: ['listings:write'],
  is_revoked: false,
  status: 'active',
  expires_at: null,
  allowed_ips: null,
  last_used_at: '2026-11-22T09:58:40.000Z',
  created_at: '2026-11-20T14:03:00.000Z',
};

export const KEY_PAGE_EXAMPLES: Examples = {
  activePage: example(
    'GET /v1/api/keys?status=active&limit=1',
    { keys: [ACTIVE_KEY], has_more: true },
    'With a query parameter, `has_more` says whether more keys follow: ask again with `starting_after` the last id.',
  ),
};

export const KEY_LIST_BAD_REQUEST_EXAMPLES: Examples = {
  limit: example('limit out of range', apiErrors.pageLimitMalformed(100).body),
  startingAfter: example('starting_after names no key of the account (or is no key id)', apiErrors.keyStartingAfterUnknown().body),
  status: example('status is none of active, expired, revoked, all', apiErrors.keyStatusMalformed().body),
  unknownQueryParameter: example('Another query parameter', apiErrors.unknownQueryParameter('active').body),
};
