import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { generateApiKey } from '../../shared/access/api-key.js';
import {
  ChangeKeyRequestSchema,
  CreateKeyRequestSchema,
  CreateKeyResponseSchema,
  KeyIdParamsSchema,
  KeyListQuerySchema,
  KeyListResponseSchema,
  KeyRecordSchema,
  RevokeKeyResponseSchema,
  ROLL_GRACE_DEFAULT_SEC,
  ROLL_GRACE_MAX_SEC,
  RollKeyRequestSchema,
  RollKeyResponseSchema,
  SHOWN_ONCE_NOTE,
} from '../../shared/api-schemas/api-keys.js';
import { keyRequestRefusal } from '../../shared/access/key-request.js';
import { queryParameterNames, refusalsByPart, refuseUnknownQueryParameters } from '../route-validation.js';
import { sessionAccountOf } from '../authenticated.js';
import {
  ACTIVE_KEY_CAP,
  KEY_PAGE_MAX,
  ROLL_KEY_CAP,
  changeKey,
  createKeyWithinCap,
  listKeys,
  revokeKey,
  rollKey,
  type ApiKeyRecord,
} from '../../shared/repositories/api-keys.js';
import { toUnderscoreForm } from '../../shared/access/scopes.js';
import type { ApiDeps } from '../deps.js';
import {
  CHANGE_KEY_BAD_REQUEST_EXAMPLES,
  CHANGE_KEY_BODY_EXAMPLES,
  CHANGED_KEY_EXAMPLES,
  CREATE_KEY_BAD_REQUEST_EXAMPLES,
  CREATE_KEY_BODY_EXAMPLES,
  CREATED_KEY_EXAMPLES,
  ERROR_EXAMPLES,
  KEY_LIST_EXAMPLES,
  REVOKED_KEY_EXAMPLES,
  ROLL_KEY_BODY_EXAMPLES,
  ROLLED_KEY_EXAMPLES,
} from '../openapi/examples.js';
import { KEY_LIST_BAD_REQUEST_EXAMPLES, KEY_PAGE_EXAMPLES } from '../openapi/key-list-examples.js';
import {
  ALWAYS,
  errorResponse,
  internalErrorResponse,
  lockedOutResponse,
  sessionAuthErrors,
  tooLargeResponse,
  unavailableResponse,
  unsupportedMediaTypeResponse,
  urlTooLongResponse,
} from '../openapi/responses.js';
import { jsonBody, jsonResponse } from '../openapi/route-schema.js';
import { example } from '../openapi/examples.js';
import { sessionAuth } from '../auth/session-auth.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import { MaybeRetryLaterErrorSchema } from '../../shared/api-schemas/error-body.js';
import { IgnoredBodySchema } from '../../shared/api-schemas/ignored-body.js';

const CREATE_BODY_LIMIT_BYTES = 16 * 1024;
/** A roll's body is `{expires_in_sec}` at most; a change's a label and 20 addresses. */
const ROLL_BODY_LIMIT_BYTES = 1024;
const CHANGE_BODY_LIMIT_BYTES = 16 * 1024;
/** note: the app's default body limit (app.ts), which a body sent to DELETE meets */
const REVOKE_BODY_LIMIT_BYTES = 64 * 1024;

const common = { tags: ['API keys'], security: [{ session: [] }] };

const sessionErrors = () => ({ ...sessionAuthErrors(), 429: lockedOutResponse(), 500: internalErrorResponse(), 503: unavailableResponse() });

const listSchema = {
  ...common,
  operationId: 'listKeys',
  summary: 'List the account\'s keys',
  description:
    'The account\'s keys, revoked ones included, newest first, at most 50; never a full key. A page at a time with `limit`, `starting_after` and `status` (`active` for the keys that work): an answer to a query with any parameter carries `has_more`. Without one the answer is `{keys}` alone, as it always was.',
  querystring: KeyListQuerySchema,
  response: {
    200: jsonResponse(KeyListResponseSchema, { description: 'Never a full key.', headers: ALWAYS, examples: { ...KEY_LIST_EXAMPLES, ...KEY_PAGE_EXAMPLES } }),
    400: errorResponse(
      `\`limit\` is not a whole number from 1 to ${KEY_PAGE_MAX}, \`starting_after\` is not the id of one of the account's keys, \`status\` is not \`active\`, \`expired\`, \`revoked\` or \`all\`, or the query has another parameter.`,
      KEY_LIST_BAD_REQUEST_EXAMPLES,
    ),
    ...sessionErrors(),
  },
};

const createSchema = {
  ...common,
  operationId: 'createKey',
  summary: 'Create a key',
  description: `The full key is in this response only. An account may hold ${ACTIVE_KEY_CAP} active keys (neither revoked nor expired). Optionally the key ends at \`expires_at\` and works only from \`allowed_ips\`.`,
  body: jsonBody(CreateKeyRequestSchema, CREATE_KEY_BODY_EXAMPLES),
  response: {
    201: jsonResponse(CreateKeyResponseSchema, { description: 'Created; store `key` now.', headers: ALWAYS, examples: CREATED_KEY_EXAMPLES }),
    400: errorResponse(
      'The body is not JSON, or `label` or `scopes` is missing or invalid (an unknown scope is named), or `expires_at` or `allowed_ips` is invalid (named).',
      CREATE_KEY_BAD_REQUEST_EXAMPLES,
    ),
    ...sessionErrors(),
    413: tooLargeResponse(CREATE_BODY_LIMIT_BYTES),
    415: unsupportedMediaTypeResponse(),
    429: errorResponse(
      `The account already has ${ACTIVE_KEY_CAP} active keys (revoke one first), or this IP is locked out after 20 failed authentications in 5 minutes.`,
      { keyCap: ERROR_EXAMPLES.keyCap, lockout: ERROR_EXAMPLES.lockout },
      [...ALWAYS, 'Retry-After'],
      MaybeRetryLaterErrorSchema,
      // note: the active-key cap is not waited out: only the lockout carries Retry-After.
      ['Retry-After'],
    ),
  },
};

const revokeSchema = {
  ...common,
  operationId: 'revokeKey',
  summary: 'Revoke a key',
  description: 'Takes effect on the very next request; cannot be undone. Revoking a revoked key answers the same. A body is not needed, and ignored when sent.',
  params: KeyIdParamsSchema,
  body: jsonBody(IgnoredBodySchema, { empty: example('An empty object (or no body at all)', {}) }),
  response: {
    200: jsonResponse(RevokeKeyResponseSchema, { description: 'Revoked.', headers: ALWAYS, examples: REVOKED_KEY_EXAMPLES }),
    ...sessionErrors(),
    // note: the route ignores its body; one sent as `application/json` is still read, within the app's limit.
    400: errorResponse('A body was sent that is not JSON (the route ignores what a body holds, but reads it). Nothing was revoked.', {
      invalidJson: example('A body that is not JSON', apiErrors.invalidJson().body, 'The route ignores its body; one sent as `application/json` is still read, and must be JSON.'),
      badRequest: ERROR_EXAMPLES.badRequest,
    }),
    404: errorResponse('Not one of the account\'s keys.', { keyNotFound: ERROR_EXAMPLES.keyNotFound }),
    414: urlTooLongResponse(),
    413: tooLargeResponse(REVOKE_BODY_LIMIT_BYTES),
    415: unsupportedMediaTypeResponse(),
  },
};

const rollSchema = {
  ...common,
  operationId: 'rollKey',
  summary: 'Roll a key',
  description: `A new key with the old one's label, scopes and allowed addresses, and no expiry; the old key keeps working for \`expires_in_sec\` (default a day, at most ${ROLL_GRACE_MAX_SEC} s: 7 days; 0 ends it at once, and never past its own \`expires_at\`), then is refused as expired on every replica. Allowed with ${ACTIVE_KEY_CAP} active keys: the account holds one more until the old key ends, and never more than ${ROLL_KEY_CAP} (429 \`active_key_limit\`). Of several rolls of one key at once exactly one succeeds.`,
  params: KeyIdParamsSchema,
  body: jsonBody(RollKeyRequestSchema, ROLL_KEY_BODY_EXAMPLES),
  response: {
    201: jsonResponse(RollKeyResponseSchema, { description: 'Rolled; store `key` now, and replace the old key before `rolled.expires_at`.', headers: ALWAYS, examples: ROLLED_KEY_EXAMPLES }),
    400: errorResponse('`expires_in_sec` is not a whole number from 0 to 604800, or the body is not an object or not JSON.', {
      rollBody: ERROR_EXAMPLES.rollBody,
      invalidJson: example('Not JSON, or not UTF-8', apiErrors.invalidJson().body),
      badRequest: ERROR_EXAMPLES.badRequest,
    }),
    ...sessionErrors(),
    404: errorResponse('Not one of the account\'s keys.', { keyNotFound: ERROR_EXAMPLES.keyNotFound }),
    414: urlTooLongResponse(),
    409: errorResponse('The key is revoked, expired or already rolled (also: another roll of it won the race).', { keyNotRollable: ERROR_EXAMPLES.keyNotRollable }),
    413: tooLargeResponse(ROLL_BODY_LIMIT_BYTES),
    429: errorResponse(
      `The account already holds ${ROLL_KEY_CAP} keys, one of them an earlier roll's old key still in its grace period: revoke that one (or wait for it to end), or roll with \`expires_in_sec\` 0. Or this IP is locked out after 20 failed authentications in 5 minutes.`,
      { rollCap: example('Key limit of a roll reached', apiErrors.keyCap(ROLL_KEY_CAP).body), lockout: ERROR_EXAMPLES.lockout },
      [...ALWAYS, 'Retry-After'],
      MaybeRetryLaterErrorSchema,
      // note: the cap is not waited out: only the lockout carries Retry-After.
      ['Retry-After'],
    ),
    415: unsupportedMediaTypeResponse(),
  },
};

const changeSchema = {
  ...common,
  operationId: 'changeKey',
  summary: 'Change a key\'s label or allowed addresses',
  description: 'Fields left out stay as they are; `allowed_ips: null` lets the key work from any address again. Takes effect on the very next request on every replica.',
  params: KeyIdParamsSchema,
  body: jsonBody(ChangeKeyRequestSchema, CHANGE_KEY_BODY_EXAMPLES),
  response: {
    200: jsonResponse(KeyRecordSchema, { description: 'The key as listed, after the change.', headers: ALWAYS, examples: CHANGED_KEY_EXAMPLES }),
    400: errorResponse('The body is not JSON or not an object, or `label` or `allowed_ips` is invalid (named).', CHANGE_KEY_BAD_REQUEST_EXAMPLES),
    ...sessionErrors(),
    404: errorResponse('Not one of the account\'s keys.', { keyNotFound: ERROR_EXAMPLES.keyNotFound }),
    414: urlTooLongResponse(),
    409: errorResponse('The key is revoked or expired: a change would not bring it back.', { keyEnded: ERROR_EXAMPLES.keyEnded }),
    413: tooLargeResponse(CHANGE_BODY_LIMIT_BYTES),
    415: unsupportedMediaTypeResponse(),
  },
};

/** The 400 of the key list's query: the first failing parameter's answer. */
const refuseKeyListQuery = refusalsByPart({
  querystring: (errors) => {
    const parameter = errors[0]?.instancePath;
    if (parameter === '/starting_after') return apiErrors.keyStartingAfterUnknown();
    if (parameter === '/status') return apiErrors.keyStatusMalformed();
    return apiErrors.pageLimitMalformed(KEY_PAGE_MAX);
  },
});

/** note: an id no key can have is answered as an unknown one. */
const refuseKeyId = refusalsByPart({ params: () => apiErrors.keyNotFound() });

/** A key as listed: never its hash, never the full key. */
const listedKey = (k: ApiKeyRecord) => ({
  id: k.id,
  label: k.label,
  key_prefix: k.keyPrefix,
  scopes: k.scopes,
  is_revoked: k.isRevoked,
  status: k.status,
  expires_at: k.expiresAt,
  allowed_ips: k.allowedIps,
  last_used_at: k.lastUsedAt,
  created_at: k.createdAt,
});

/** The create answer's and a roll's fields of a new key (docs/endpoints.md#key-management). */
const createdKey = (fullKey: string, k: ApiKeyRecord) => ({
  key: fullKey,
  metadata: { id: k.id, label: k.label, key_prefix: k.keyPrefix, scopes: k.scopes.map(toUnderscoreForm), created_at: k.createdAt },
  note: SHOWN_ONCE_NOTE,
  expires_at: k.expiresAt,
  allowed_ips: k.allowedIps,
});

/** The 400 texts of docs/access.md#api-keys for a key-creation body its schema refused. */
const refuseKeyBody = refusalsByPart({
  body: (errors) =>
    keyRequestRefusal(
      errors.map((error) => {
        // note: the zod type provider passes a custom issue's own params on under `params`.
        const unknownScope = (error.params as { params?: { unknownScope?: unknown } }).params?.unknownScope;
        return { path: error.instancePath.slice(1), message: error.message ?? '', ...(typeof unknownScope === 'string' ? { unknownScope } : {}) };
      }),
    ),
});

/** The 400 of a key change: as creation's, with its own answer for a body that is no object. */
const refuseChangeBody = refusalsByPart({
  params: () => apiErrors.keyNotFound(),
  body: (errors) => keyRequestRefusal(errors.map((error) => ({ path: error.instancePath.slice(1), message: error.message ?? '' })), apiErrors.keyChangeEnvelope),
});

/** note: the key is looked up first: an unknown id is 404 whatever the body. */
const refuseRollBody = refusalsByPart({ params: () => apiErrors.keyNotFound(), body: () => apiErrors.rollBodyMalformed() });

/**
 * A change that authentication checks (a revocation, a roll's new end, new allowed addresses)
 * holds from the very next request on every replica: after its commit and before the reply, the
 * auth version is bumped, and every replica drops its cached keys (key-cache.ts).
 */
async function takeEffectOnEveryReplica(deps: Pick<ApiDeps, 'authVersion'>): Promise<void> {
  await deps.authVersion.bump();
}

/** Key management with the session token (docs/endpoints.md#key-management, docs/access.md#api-keys). */
export async function keyRoutes(fastify: FastifyInstance, deps: ApiDeps): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { sql } = deps;
  const onRequest = sessionAuth(deps);

  app.get('/v1/api/keys', {
    schema: listSchema,
    schemaErrorFormatter: refuseKeyListQuery,
    onRequest: [onRequest, refuseUnknownQueryParameters(Object.keys(KeyListQuerySchema.shape))],
  }, async (request) => {
    const { limit, status, starting_after: startingAfter } = request.query;
    const page = await listKeys(sql, sessionAccountOf(request).id, { limit, status, ...(startingAfter === undefined ? {} : { startingAfter }) });
    if (!page) throw apiErrors.keyStartingAfterUnknown();
    const keys = page.keys.map(listedKey);
    // note: the plain list (docs/endpoints.md#key-management) is `{keys}` and nothing else: a
    // client that sends no parameter gets exactly that; paging answers say whether more follow.
    return queryParameterNames(request.url).length === 0 ? { keys } : { keys, has_more: page.hasMore };
  });

  app.post('/v1/api/keys', { schema: createSchema, schemaErrorFormatter: refuseKeyBody, onRequest, bodyLimit: CREATE_BODY_LIMIT_BYTES }, async (request, reply) => {
    const { label, scopes, expires_at: expiresAt, allowed_ips: allowedIps } = request.body;
    const generated = generateApiKey();
    const created = await createKeyWithinCap(sql, {
      accountId: sessionAccountOf(request).id,
      label,
      scopes,
      keyPrefix: generated.prefix,
      keyHash: generated.hash,
      expiresAt: expiresAt ?? null,
      allowedIps: allowedIps ?? null,
    });
    if (created === 'cap-reached') {
      throw apiErrors.keyCap(ACTIVE_KEY_CAP);
    }
    return reply.code(201).send(createdKey(generated.fullKey, created));
  });

  app.post('/v1/api/keys/:id/roll', { schema: rollSchema, schemaErrorFormatter: refuseRollBody, onRequest, bodyLimit: ROLL_BODY_LIMIT_BYTES }, async (request, reply) => {
    // note: a request without a body has no Content-Type to parse by; one with the JSON body
    // `null` has, and `null` is no object.
    if (request.body === null && request.headers['content-type'] !== undefined) throw apiErrors.rollBodyMalformed();
    const generated = generateApiKey();
    const outcome = await rollKey(sql, sessionAccountOf(request).id, request.params.id, request.body?.expires_in_sec ?? ROLL_GRACE_DEFAULT_SEC, {
      keyPrefix: generated.prefix,
      keyHash: generated.hash,
    });
    if (outcome === 'not-found') throw apiErrors.keyNotFound();
    if (outcome === 'not-rollable') throw apiErrors.keyNotRollable();
    if (outcome === 'cap-reached') throw apiErrors.keyCap(ROLL_KEY_CAP);
    // the old key's new end
    await takeEffectOnEveryReplica(deps);
    const { created, rolled } = outcome;
    return reply.code(201).send({
      ...createdKey(generated.fullKey, created),
      // note: a rolled key always has an end (the check api_keys_rolled_has_end); the fallback only narrows the type.
      rolled: { id: rolled.id, key_prefix: rolled.keyPrefix, expires_at: rolled.expiresAt ?? created.createdAt },
    });
  });

  app.patch('/v1/api/keys/:id', { schema: changeSchema, schemaErrorFormatter: refuseChangeBody, onRequest, bodyLimit: CHANGE_BODY_LIMIT_BYTES }, async (request) => {
    const { label, allowed_ips: allowedIps } = request.body;
    const changed = await changeKey(sql, sessionAccountOf(request).id, request.params.id, {
      ...(label === undefined ? {} : { label }),
      ...(allowedIps === undefined ? {} : { allowedIps }),
    });
    if (changed === 'not-found') throw apiErrors.keyNotFound();
    if (changed === 'ended') throw apiErrors.keyEnded();
    // the new addresses; note: a label is not checked on requests, and its change leaves the caches be
    if (allowedIps !== undefined) await takeEffectOnEveryReplica(deps);
    return listedKey(changed);
  });

  app.delete('/v1/api/keys/:id', { schema: revokeSchema, schemaErrorFormatter: refuseKeyId, onRequest }, async (request) => {
    const revoked = await revokeKey(sql, sessionAccountOf(request).id, request.params.id);
    if (!revoked) throw apiErrors.keyNotFound();
    // the revocation
    await takeEffectOnEveryReplica(deps);
    return { revoked: { id: revoked.id, key_prefix: revoked.keyPrefix, is_revoked: true } };
  });
}
