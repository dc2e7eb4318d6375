import { readFileSync } from 'node:fs';
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { ACTIVE_KEY_CAP } from '../../shared/repositories/api-keys.js';
import { TIER_LIMITS } from '../../shared/access/tiers.js';
import { SERVICE_VERSION } from '../version.js';

// note: read like version.ts reads package.json; the Docker image copies CHANGELOG.md beside it.
const CHANGELOG_URL = new URL('../../../CHANGELOG.md', import.meta.url);

/** CHANGELOG.md without its title, its headings one level down, to sit under "Changelog". */
export function changelogSection(markdown: string): string {
  return markdown.replace(/^# .*\n+/, '').replace(/^(#+) /gm, '#$1 ');
}

const { enterprise, global } = TIER_LIMITS;

const INTRODUCTION = `Partners on an Enterprise or Global subscription push machines and marketplace listings into their own account from their own servers: hundreds of rows a request, validated row by row, written exactly once, answered synchronously.

- **Authentication.** The API-key endpoints take \`Authorization: Bearer svc_live_…\`; key management takes the app's session token instead. Never put an API key in client-side code: browser requests from other origins are refused.
- **Errors** are JSON \`{"error": "…", "code": "…"}\`, with the extra fields each status lists: \`error\` is for a person, \`code\` for a program, a stable snake_case name; each response lists the codes it carries today (\`rate_limited_minute\`, \`locked_out\`, …), a list open to codes added later. A code never changes meaning once published; new codes may be added, so handle a code you do not know as its HTTP status says (never fail on it). The codes of a row's problems (\`details[].code\`) are open alike. Every response carries \`X-Request-Id\`.
- **Rate limits** are per account, shared by its keys: ${enterprise.perMinute.toLocaleString('en-US')} a minute and ${enterprise.perDay.toLocaleString('en-US')} a day on Enterprise, ${global.perMinute.toLocaleString('en-US')} and ${global.perDay.toLocaleString('en-US')} on Global. Every API-key response reports them in the \`X-RateLimit-*\` headers and the IETF \`RateLimit-Policy\` and \`RateLimit\` fields; over a limit, 429 with \`Retry-After\`.
- **Retrying an import** is safe with an \`Idempotency-Key\`: a repeat never inserts twice. A 4xx or a 503 wrote nothing; after a 500 or 504, retry with the same key.
- **Every import can be looked up**: the answers that wrote or may write carry \`import_id\` and \`Location\`; \`GET /v1/api/imports/{id}\` tells its state and counts (watch an import answered 504 there until it ends), \`/errors\` its failed rows, also as CSV.
- **Keys**: up to ${ACTIVE_KEY_CAP} active keys an account; the full key is shown once, at creation.

This reference is generated from the schemas the service validates and serializes with; the document itself is at [\`/v1/openapi.json\`](/v1/openapi.json). Send requests from your server (for example with curl); the reference does not send them.`;

/** The fixed parts of the OpenAPI document; paths and schemas come from the routes. */
export function openapiDocument(): NonNullable<FastifyDynamicSwaggerOptions['openapi']> {
  const changelog = changelogSection(readFileSync(CHANGELOG_URL, 'utf8'));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Bulk Import API',
      version: SERVICE_VERSION,
      description: `${INTRODUCTION}\n\n# Changelog\n\n${changelog}`,
      // note: the API is offered to partners under their marketplace agreement, not an open licence.
      license: { name: 'Proprietary: for partners under their marketplace agreement', identifier: 'LicenseRef-Proprietary' },
      contact: { name: 'The Bulk Import API team (vulnerabilities: see SECURITY.md in the repository)' },
    },
    // note: relative: the document describes the server that serves it, wherever it is deployed.
    servers: [{ url: '/', description: 'The server this document was fetched from' }],
    tags: [
      { name: 'Account', description: 'The account and key in use.' },
      { name: 'Bulk imports', description: 'Machines and listings, 1 to 500 or 200 rows a request.' },
      { name: 'Archive and delete', description: 'Rows of the account named by your ids or ours, 1 to 1,000 a request: taken out of the active list and the marketplace (archive), or removed for good (delete).' },
      { name: 'Imports', description: 'Every import, read back: its state, counts and failed rows, kept 30 days (by default) after it ended.' },
      { name: 'Catalogue', description: 'The account\'s listings and machines, read back as stored, active or archived.' },
      { name: 'API keys', description: 'Key management, with the session token: create (with an optional end and allowed addresses), list, roll with a grace period, change the label or allowed addresses, revoke.' },
      { name: 'Health', description: 'Liveness of the API and its dependencies.' },
    ],
    components: {
      securitySchemes: {
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'svc_live_<8 hex>_<32 hex>',
          description:
            'An API key, `svc_live_` + 8 lowercase hex characters (the prefix) + `_` + 32 lowercase hex characters, created with `POST /v1/api/keys` or in the app\'s Developer panel. A missing or badly formed key gets 401 `Missing or malformed API key`; an unknown or revoked one 401 `Invalid API key`, an expired one the same text with `code: api_key_expired`; a key used from an address outside its `allowed_ips` 403 `API key not allowed from this address` (`ip_not_allowed`). Its scopes decide what it may do: `listings:write` the bulk imports, `jobs:read` (or `listings:write`) reading imports back, `listings:read` (or `listings:write`) reading listings and machines back; a key without them gets 403 naming the scope (`listings_write`, `jobs_read`, `listings_read`).',
        },
        session: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'The account\'s signed-in session token from the app (a JWT), for key management only; this API never issues one. Missing or not a JWT: 401 `Missing or malformed session token`; bad signature, expired, or unknown account: 401 `Invalid session token`.',
        },
      },
    },
  };
}
