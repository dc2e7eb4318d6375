import type { FastifyInstance } from 'fastify';
import { MeResponseSchema, type MeResponse } from '../../shared/api-schemas/account.js';
import type { AuthenticatedKey } from '../../shared/repositories/api-keys.js';
import type { ApiDeps } from '../deps.js';
import { ME_EXAMPLES } from '../openapi/examples.js';
import { apiKeyAuthErrors, AUTHENTICATED, internalErrorResponse, unavailableResponse } from '../openapi/responses.js';
import { jsonResponse } from '../openapi/route-schema.js';
import { apiKeyAuth } from '../auth/api-key-auth.js';
import { authenticatedKey } from '../authenticated.js';
import { serializeFrozenOnce } from '../serialize-once.js';

const schema = {
  operationId: 'getMe',
  summary: 'The account and key in use',
  description: 'No scope needed. Counts toward the rate limits.',
  tags: ['Account'],
  security: [{ apiKey: [] }],
  response: {
    200: jsonResponse(MeResponseSchema, { description: 'The key\'s account; scopes in colon form.', headers: AUTHENTICATED, examples: ME_EXAMPLES }),
    ...apiKeyAuthErrors({ scoped: false }),
    500: internalErrorResponse(AUTHENTICATED),
    503: unavailableResponse(),
  },
};

/**
 * The answers by key. note: an answer says only what its key's object says, and the key cache
 * replaces that object (a new one from PostgreSQL) whenever the key, its account or the auth
 * version changes; so the answer is built once per object, frozen, and serialized once
 * (serializeFrozenOnce), as fresh as the key the request was admitted with.
 */
const answers = new WeakMap<AuthenticatedKey, MeResponse>();

function answerFor(key: AuthenticatedKey): MeResponse {
  let answer = answers.get(key);
  if (answer === undefined) {
    const { account } = key;
    answer = {
      id: account.id,
      display_name: account.displayName,
      // note: a key reaches the handler only with a tier that has API access (402 otherwise)
      subscription_tier: account.subscriptionTier as MeResponse['subscription_tier'],
      is_owner: account.isOwner,
      has_completed_onboarding: account.hasCompletedOnboarding,
      key: { prefix: key.keyPrefix, scopes: [...key.scopes], expires_at: key.expiresAt, allowed_ips: key.allowedIpEntries && [...key.allowedIpEntries] },
    };
    Object.freeze(answer.key.scopes);
    Object.freeze(answer.key.allowed_ips);
    Object.freeze(answer.key);
    answers.set(key, Object.freeze(answer));
  }
  return answer;
}

/** `GET /v1/api/me`: the account and the key in use (docs/endpoints.md#get-v1apime); scopes in colon form. */
export async function meRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.get('/v1/api/me', { schema, serializerCompiler: serializeFrozenOnce, config: { auth: 'api-key' }, onRequest: apiKeyAuth(deps) }, async (request) =>
    answerFor(authenticatedKey(request)),
  );
}
