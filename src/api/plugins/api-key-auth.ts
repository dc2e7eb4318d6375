import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { ApiError, retryAfterHeaders } from '../../shared/api-error.js';
import { bearerToken, hashApiKey, isWellFormedApiKey } from '../../shared/api-key.js';
import { findActiveKeyByHash, touchKeyLastUsed, type AuthenticatedKey } from '../../shared/repositories/api-keys.js';
import { toUnderscoreForm } from '../../shared/scopes.js';
import { clientIp } from '../client-ip.js';
import type { ApiDeps } from '../deps.js';
import type { QuotaCount, QuotaDecision } from '../limits/account-quota.js';
import { requireApiTier } from './account-access.js';
import { lockedOut } from './lockout-guard.js';

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
 * lockout (429) -> key (401) -> tier (402) -> account quota (429) -> scope (403).
 *
 * A key found in the cache costs one Redis round trip (lockout, auth version and both quota
 * windows together) and no PostgreSQL query. A key not cached, or cached under an older auth
 * version (something was revoked or a tier changed since), is loaded from PostgreSQL first.
 */
export function apiKeyAuth(deps: ApiDeps): onRequestAsyncHookHandler {
  const { sql, quota, lockout, config, keyCache, authVersion } = deps;

  async function fail(request: FastifyRequest, error: string): Promise<never> {
    await lockout.recordFailure(clientIp(request));
    throw new ApiError(401, { error });
  }

  async function lockoutResult(request: FastifyRequest): Promise<number | undefined> {
    return request.lockoutCheck ?? lockout.lockedForSec(clientIp(request));
  }

  /** Loads the key from PostgreSQL under the current auth version; lockout first. */
  async function loadKey(request: FastifyRequest, hash: Buffer, cacheKey: string): Promise<AuthenticatedKey> {
    const [lockedForSec, version] = await Promise.all([lockoutResult(request), authVersion.current()]);
    if (lockedForSec !== undefined) throw lockedOut(lockedForSec);
    // note: the version is read before the query, so a revocation that commits after this read
    // bumps the version past the one stored with the entry, and the entry is never used.
    const key = await findActiveKeyByHash(sql, hash);
    if (!key) return fail(request, 'Invalid API key');
    keyCache.set(cacheKey, { key, version });
    return key;
  }

  return async function authenticateApiKey(request, reply) {
    const token = bearerToken(request.headers.authorization);
    if (token === undefined || !isWellFormedApiKey(token)) {
      const lockedForSec = await lockoutResult(request);
      if (lockedForSec !== undefined) throw lockedOut(lockedForSec);
      return fail(request, 'Missing or malformed API key');
    }
    const hash = hashApiKey(token);
    const cacheKey = hash.toString('base64');
    const cached = keyCache.get(cacheKey);

    let key: AuthenticatedKey;
    let count: QuotaCount | undefined;
    if (cached) {
      const [lockedForSec, version, counted] = await Promise.all([
        lockoutResult(request),
        authVersion.current(),
        quota.count(cached.key.account.id),
      ]);
      if (lockedForSec !== undefined) {
        quota.refund(counted);
        throw lockedOut(lockedForSec);
      }
      if (version === cached.version) {
        key = cached.key;
        count = counted;
      } else {
        quota.refund(counted);
        keyCache.delete(cacheKey);
        key = await loadKey(request, hash, cacheKey);
      }
    } else {
      key = await loadKey(request, hash, cacheKey);
    }

    const tier = requireApiTier(key.account, config.upgradeUrl);
    const decision = quota.decide(count ?? (await quota.count(key.account.id)), tier);
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
      // Remembered in the cached entry too, so this replica writes at most once a minute per key.
      key.lastUsedAt = new Date();
      // note: not awaited; a slow or failed bookkeeping write must not delay or fail the request.
      touchKeyLastUsed(sql, key.keyId).catch((err: unknown) => request.log.warn({ err }, 'could not record key use'));
    }
  };
}
