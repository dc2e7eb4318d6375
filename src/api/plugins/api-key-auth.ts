import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { ApiError, retryAfterHeaders } from '../../shared/api-error.js';
import { bearerToken, hashApiKey, isWellFormedApiKey } from '../../shared/api-key.js';
import { findActiveKeyByHash, touchKeyLastUsed } from '../../shared/repositories/api-keys.js';
import { toUnderscoreForm } from '../../shared/scopes.js';
import { clientIp } from '../client-ip.js';
import type { ApiDeps } from '../deps.js';
import type { QuotaDecision } from '../limits/account-quota.js';
import { requireApiTier } from './account-access.js';

const LAST_USED_RESOLUTION_MS = 60_000;

function setQuotaHeaders(reply: FastifyReply, quota: QuotaDecision): void {
  reply.headers({
    'x-ratelimit-limit-minute': String(quota.minute.limit),
    'x-ratelimit-remaining-minute': String(quota.minute.remaining),
    'x-ratelimit-limit-day': String(quota.day.limit),
    'x-ratelimit-remaining-day': String(quota.day.remaining),
  });
}

/**
 * Authenticates an API-key route before its body is read, in the order of decisions B:
 * key (401) -> tier (402) -> account quota (429) -> scope (403). The lockout guard ran before.
 */
export function apiKeyAuth(deps: ApiDeps): onRequestAsyncHookHandler {
  const { sql, quota, lockout, config } = deps;

  async function fail(request: FastifyRequest, error: string): Promise<never> {
    await lockout.recordFailure(clientIp(request));
    throw new ApiError(401, { error });
  }

  return async function authenticateApiKey(request, reply) {
    const token = bearerToken(request.headers.authorization);
    if (token === undefined || !isWellFormedApiKey(token)) return fail(request, 'Missing or malformed API key');
    const key = await findActiveKeyByHash(sql, hashApiKey(token));
    if (!key) return fail(request, 'Invalid API key');

    const tier = requireApiTier(key.account, config.upgradeUrl);
    const decision = await quota.consume(key.account.id, tier);
    setQuotaHeaders(reply, decision);
    if (decision.exceeded) {
      const { window, retryAfterSec } = decision.exceeded;
      throw new ApiError(
        429,
        { error: `Rate limit exceeded (${window})`, retry_after_sec: retryAfterSec },
        retryAfterHeaders(retryAfterSec),
      );
    }

    const required = request.routeOptions.config.requiredScope;
    if (required !== undefined && !key.scopes.includes(required)) {
      throw new ApiError(403, { error: `Missing required scope: ${toUnderscoreForm(required)}` });
    }

    request.apiKey = key;
    if (key.lastUsedAt === null || Date.now() - key.lastUsedAt.getTime() >= LAST_USED_RESOLUTION_MS) {
      // note: not awaited; a slow or failed bookkeeping write must not delay or fail the request.
      touchKeyLastUsed(sql, key.keyId).catch((err: unknown) => request.log.warn({ err }, 'could not record key use'));
    }
  };
}
