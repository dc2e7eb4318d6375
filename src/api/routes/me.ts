import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../deps.js';
import { apiKeyAuth } from '../plugins/api-key-auth.js';

/** `GET /v1/api/me`: the account and the key in use (spec 4.1); scopes in colon form. */
export async function meRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.get('/v1/api/me', { config: { auth: 'api-key' }, onRequest: apiKeyAuth(deps) }, async (request) => {
    const key = request.apiKey!;
    const { account } = key;
    return {
      id: account.id,
      display_name: account.display_name,
      subscription_tier: account.subscription_tier,
      is_owner: account.is_owner,
      has_completed_onboarding: account.has_completed_onboarding,
      key: { prefix: key.keyPrefix, scopes: key.scopes },
    };
  });
}
