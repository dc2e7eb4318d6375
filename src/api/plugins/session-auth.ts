import type { onRequestAsyncHookHandler } from 'fastify';
import { ApiError } from '../../shared/api-error.js';
import { bearerToken } from '../../shared/api-key.js';
import { findAccount, isUuid } from '../../shared/repositories/accounts.js';
import { verifySessionToken } from '../../shared/session-token.js';
import { clientIp } from '../client-ip.js';
import type { ApiDeps } from '../deps.js';
import { requireApiTier } from './account-access.js';

/**
 * Key management authenticates with the app's session token (decisions D), then requires an
 * API tier (spec 4.4). It is not charged to the account's quota, so a leaked key can always be
 * revoked; failures count toward the IP lockout like any 401.
 */
export function sessionAuth(deps: ApiDeps): onRequestAsyncHookHandler {
  const { sql, lockout, config } = deps;

  return async function authenticateSession(request) {
    const fail = async (error: string): Promise<never> => {
      await lockout.recordFailure(clientIp(request));
      throw new ApiError(401, { error });
    };
    const token = bearerToken(request.headers.authorization);
    if (token === undefined) return fail('Missing or malformed session token');
    const verified = await verifySessionToken(token, config.sessionSecret, config.sessionMaxTtlSec);
    if (!verified.ok) return fail(verified.reason === 'malformed' ? 'Missing or malformed session token' : 'Invalid session token');
    const account = isUuid(verified.accountId) ? await findAccount(sql, verified.accountId) : undefined;
    if (!account) return fail('Invalid session token');
    requireApiTier(account, config.upgradeUrl);
    request.sessionAccount = account;
  };
}
