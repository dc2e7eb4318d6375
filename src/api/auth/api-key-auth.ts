import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { ApiError } from '../../shared/errors/api-error.js';
import { bearerToken, hashApiKeyBase64, isWellFormedApiKey } from '../../shared/access/api-key.js';
import { findActiveKeyByHash, type AuthenticatedKey } from '../../shared/repositories/api-keys.js';
import { toUnderscoreForm, type Scope } from '../../shared/access/scopes.js';
import { clientIp } from '../client-ip.js';
import type { Config } from '../../shared/infra/config.js';
import type { Sql } from '../../shared/infra/db.js';
import type { BatchedReads } from '../../shared/infra/batched-reads.js';
import type { AuthVersion } from '../../shared/access/auth-version.js';
import type { ApiMetrics } from '../api-metrics.js';
import type { AccountQuota, QuotaCount, QuotaDecision } from '../limits/account-quota.js';
import type { AuthLockout } from '../limits/auth-lockout.js';
import { rateLimitFields } from '../limits/rate-limit-fields.js';
import { secondsUntil } from '../limits/store-unavailable.js';
import type { KeyCache } from './key-cache.js';
import type { KeyUseRecorder } from './key-use-recorder.js';
import { requireApiTier } from './account-access.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import { keyRefusal, keyRefusalError } from '../../shared/access/key-refusal.js';

const LAST_USED_RESOLUTION_MS = 60_000;

/** The `X-RateLimit-*` headers and, with the same numbers, the IETF `RateLimit-Policy` and `RateLimit` fields. */
function setQuotaHeaders(reply: FastifyReply, quota: QuotaDecision): void {
  reply.headers({
    'x-ratelimit-limit-minute': String(quota.minute.limit),
    'x-ratelimit-remaining-minute': String(quota.minute.remaining),
    'x-ratelimit-limit-day': String(quota.day.limit),
    'x-ratelimit-remaining-day': String(quota.day.remaining),
    ...rateLimitFields(quota),
  });
}

export interface ApiKeyAuthDeps {
  sql: Sql;
  /** the IP's lockout and the auth version, read with the other requests' (BatchedReads) */
  reads: BatchedReads;
  quota: AccountQuota;
  lockout: AuthLockout;
  config: Pick<Config, 'upgradeUrl'>;
  keyCache: KeyCache;
  keyUse: KeyUseRecorder;
  authVersion: AuthVersion;
  metrics: Pick<ApiMetrics, 'authLockouts' | 'rateLimited'>;
}

/**
 * Authenticates an API-key route before its body is read, in the order of docs/access.md#order-of-checks:
 * lockout (429) -> key (401; expired too) -> client address (403) -> tier (402) -> account quota
 * (429) -> scope (403).
 *
 * A key found in the cache costs one command to Redis and no PostgreSQL query: the script that
 * reads the IP's lockout and the auth version and counts the quota windows when neither refuses,
 * or, when this process holds a share of the account's quota, an MGET of the lockout and the
 * version shared with the requests that arrived with it. A key not cached, or cached under an
 * older auth version (something was revoked or a tier changed since), is loaded from PostgreSQL
 * first.
 */
export function apiKeyAuth(deps: ApiKeyAuthDeps): onRequestAsyncHookHandler {
  const { sql, reads, quota, lockout, config, keyCache, keyUse, authVersion, metrics } = deps;

  async function fail(ip: string, error: ApiError): Promise<never> {
    await lockout.recordFailure(ip);
    throw error;
  }

  /** The IP's lockout and the current auth version, in one command; throws 429 when locked. */
  async function gate(ip: string): Promise<string> {
    let failures: string | null;
    let version: string | null;
    try {
      [failures = null, version = null] = await reads.getAll([lockout.failureKey(ip), authVersion.key]);
    } catch {
      throw apiErrors.serviceUnavailable();
    }
    if (lockout.isLockedOut(failures)) {
      metrics.authLockouts.inc();
      throw apiErrors.lockedOut((await lockout.lockedForSec(ip)) ?? 1);
    }
    return version ?? '0';
  }

  /** Loads the key from PostgreSQL under `version`, read before the query. */
  async function loadKey(ip: string, cacheKey: string, version: string): Promise<AuthenticatedKey> {
    // note: the version is read before the query, so a revocation that commits after this read
    // bumps the version past the one stored with the entry, and the entry is never used; a
    // database notification during the query keeps the result out of the cache.
    const loadStartedAt = keyCache.startLoad();
    const key = await findActiveKeyByHash(sql, Buffer.from(cacheKey, 'base64'));
    if (!key) return fail(ip, apiErrors.apiKeyInvalid());
    keyCache.set(cacheKey, { key, version }, loadStartedAt);
    return key;
  }

  /**
   * The key's end and addresses: an expired key is 401 as a revoked one (with its own code), a
   * foreign address 403; both are failed attempts for the lockout. note: decided right after the
   * key is recognised, before its account's tier and quota: a leaked key used from elsewhere
   * spends none of the partner's quota and gets no rate-limit headers, and a refusal follows the
   * same steps as an unknown key's (the lockout read, the key's lookup, the failure recorded).
   * The refused request is logged with the key's account and prefix: the partner's security
   * team asks which key was used from where.
   */
  async function admitKey(request: FastifyRequest, ip: string, key: AuthenticatedKey): Promise<AuthenticatedKey> {
    const refusal = keyRefusal(key, ip);
    if (refusal === undefined) return key;
    request.apiKey = key;
    return fail(ip, keyRefusalError(refusal));
  }

  /** Steps 1-2: the IP's lockout, then the key: from the cache while its auth version holds. */
  async function identify(request: FastifyRequest, ip: string): Promise<{ key: AuthenticatedKey; count?: QuotaCount }> {
    const token = bearerToken(request.headers.authorization);
    if (token === undefined || !isWellFormedApiKey(token)) {
      await gate(ip);
      return fail(ip, apiErrors.apiKeyMissing());
    }
    // note: the key's hash, as base64, names it in the cache; a key not cached is loaded by it.
    const cacheKey = hashApiKeyBase64(token);
    const cached = keyCache.get(cacheKey);
    if (!cached) return { key: await admitKey(request, ip, await loadKey(ip, cacheKey, await gate(ip))) };
    if (keyRefusal(cached.key, ip) !== undefined) {
      // note: no quota is counted for a key the cache says is refused; the refusal stands only
      // while the auth version holds (a PATCH may have allowed this address since).
      const version = await gate(ip);
      if (version === cached.version) return { key: await admitKey(request, ip, cached.key) };
      keyCache.delete(cacheKey);
      return { key: await admitKey(request, ip, await loadKey(ip, cacheKey, version)) };
    }

    const reload = async (version: string) => {
      keyCache.delete(cacheKey);
      return { key: await admitKey(request, ip, await loadKey(ip, cacheKey, version)) };
    };
    // note: the quota is counted by the command that reads the lockout and the auth version, and
    // only when neither refuses (QuotaCountScript): one command for the three.
    const { account } = cached.key;
    const counted = await quota.countBehind(account.id, account.subscriptionTier, {
      failureKey: lockout.failureKey(ip),
      lockoutAt: lockout.threshold,
      versionKey: authVersion.key,
      version: cached.version,
    });
    switch (counted.outcome) {
      case 'counted':
        return { key: cached.key, count: counted.count };
      case 'locked':
        metrics.authLockouts.inc();
        throw apiErrors.lockedOut(secondsUntil(counted.msLeft));
      case 'stale':
        return reload(counted.version);
      case 'local': {
        // Counted from this process's share: the gate is read on its own (with the other
        // requests', BatchedReads), and the point given back if the request turns out not to be
        // the cached key's (locked out, or the key changed since).
        let version: string;
        try {
          version = await gate(ip);
        } catch (error) {
          quota.refund(counted.count);
          throw error;
        }
        if (version === cached.version) return { key: cached.key, count: counted.count };
        quota.refund(counted.count);
        return reload(version);
      }
    }
  }

  /** Step 4: the account's quota, whose headers the answer carries either way. */
  function admitQuota(decision: QuotaDecision, reply: FastifyReply): void {
    setQuotaHeaders(reply, decision);
    if (decision.exceeded) {
      const { window, retryAfterSec } = decision.exceeded;
      metrics.rateLimited.inc({ window });
      throw apiErrors.rateLimited(window, retryAfterSec);
    }
  }

  /** Bookkeeping: `last_used_at`, written at most once a minute per key by this replica. */
  function recordUse(key: AuthenticatedKey): void {
    if (key.lastUsedAt !== null && Date.now() - key.lastUsedAt.getTime() < LAST_USED_RESOLUTION_MS) return;
    // Remembered in the cached entry too, so this replica writes at most once a minute per key.
    key.lastUsedAt = new Date();
    keyUse.record(key.keyId);
  }

  return async function authenticateApiKey(request: FastifyRequest, reply) {
    const ip = clientIp(request);
    const { key, count } = await identify(request, ip);
    // note: set once the key is known, so that a request the account's tier, quota or the
    // route's scope refuses is logged with its account and key prefix too (request-log.ts); a
    // handler reads it through authenticatedKey, which only runs once every check passed.
    request.apiKey = key;
    // Steps 3-4: the account's tier, then its quota. note: inline rather than an async step of
    // its own: a cached key's request was counted with its gate (identify) and goes on without
    // another await; only a key just loaded waits for its count here.
    const tier = requireApiTier(key.account, config.upgradeUrl);
    admitQuota(quota.decide(count ?? (await quota.count(key.account.id, tier)), tier), reply);
    // Step 5: the route's scope.
    const required = request.routeOptions.config.requiredScope;
    if (required !== undefined) {
      const accepted: readonly Scope[] = typeof required === 'string' ? [required] : required;
      if (!accepted.some((scope) => key.scopes.includes(scope))) throw apiErrors.scopeMissing(toUnderscoreForm(accepted[0]!));
    }
    recordUse(key);
  };
}
