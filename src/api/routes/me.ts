import type { FastifyInstance } from 'fastify';
import { MeResponseSchema } from '../../shared/api-schemas/account.js';
import type { ApiDeps } from '../deps.js';
import { ME_EXAMPLES } from '../openapi/examples.js';
import { apiKeyAuthErrors, AUTHENTICATED, internalErrorResponse, unavailableResponse } from '../openapi/responses.js';
import { jsonResponse } from '../openapi/route-schema.js';
import { apiKeyAuth } from '../auth/api-key-auth.js';
import { authenticatedKey } from '../authenticated.js';

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

/** `GET /v1/api/me`: the account and the key in use (docs/endpoints.md#get-v1apime); scopes in colon form. */
export async function meRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.get('/v1/api/me', { schema, config: { auth: 'api-key' }, onRequest: apiKeyAuth(deps) }, async (request) => {
    const key = authenticatedKey(request);
    const { account } = key;
    return {
      id: account.id,
      display_name: account.displayName,
      subscription_tier: account.subscriptionTier,
      is_owner: account.isOwner,
      has_completed_onboarding: account.hasCompletedOnboarding,
      key: { prefix: key.keyPrefix, scopes: key.scopes, expires_at: key.expiresAt, allowed_ips: key.allowedIpEntries },
    };
  });
}
