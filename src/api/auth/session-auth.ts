import type { onRequestAsyncHookHandler } from 'fastify';
import type { ApiError } from '../../shared/errors/api-error.js';
import { bearerToken } from '../../shared/access/api-key.js';
import { findAccount, isUuid } from '../../shared/repositories/accounts.js';
import { verifySessionToken } from '../../shared/access/session-token.js';
import { clientIp } from '../client-ip.js';
import type { Config } from '../../shared/infra/config.js';
import type { Sql } from '../../shared/infra/db.js';
import type { AuthLockout } from '../limits/auth-lockout.js';
import { requireApiTier } from './account-access.js';
import { apiErrors } from '../../shared/errors/api-errors.js';

/**
 * Key management authenticates with the app's session token (docs/access.md#session-tokens), then requires an
 * API tier (docs/endpoints.md#key-management). It is not charged to the account's quota, so a leaked key can always be
 * revoked; failures count toward the IP lockout like any 401.
 */
export interface SessionAuthDeps {
  sql: Sql;
  lockout: AuthLockout;
  config: Pick<Config, 'sessionSecret' | 'sessionMaxTtlSec' | 'upgradeUrl'>;
}

export function sessionAuth(deps: SessionAuthDeps): onRequestAsyncHookHandler {
  const { sql, lockout, config } = deps;

  return async function authenticateSession(request) {
    const fail = async (error: ApiError): Promise<never> => {
      await lockout.recordFailure(clientIp(request));
      throw error;
    };
    const token = bearerToken(request.headers.authorization);
    if (token === undefined) return fail(apiErrors.sessionMissing());
    const verified = await verifySessionToken(token, config.sessionSecret, config.sessionMaxTtlSec);
    if (!verified.ok) return fail(verified.reason === 'malformed' ? apiErrors.sessionMissing() : apiErrors.sessionInvalid());
    const account = isUuid(verified.accountId) ? await findAccount(sql, verified.accountId) : undefined;
    if (!account) return fail(apiErrors.sessionInvalid());
    requireApiTier(account, config.upgradeUrl);
    request.sessionAccount = account;
  };
}
