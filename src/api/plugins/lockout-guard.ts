import type { FastifyInstance } from 'fastify';
import { ApiError, retryAfterHeaders } from '../../shared/api-error.js';
import { clientIp } from '../client-ip.js';
import type { AuthLockout } from '../limits/auth-lockout.js';

export function lockedOut(retryAfterSec: number): ApiError {
  return new ApiError(
    429,
    { error: 'Too many failed authentication attempts', retry_after_sec: retryAfterSec },
    retryAfterHeaders(retryAfterSec),
  );
}

/**
 * A locked-out IP gets 429 on every `/v1/api/*` request, with a valid key too (decisions B).
 * Runs first among the auth steps; `/v1/health` is never locked out. On API-key routes the check
 * only starts here, and the API-key hook awaits it together with its other Redis reads, so the
 * lockout and the quota cost one round trip.
 */
export function registerLockoutGuard(app: FastifyInstance, lockout: AuthLockout): void {
  app.addHook('onRequest', async (request) => {
    if (!request.url.startsWith('/v1/api/')) return;
    const check = lockout.lockedForSec(clientIp(request));
    if (request.routeOptions.config.auth === 'api-key') {
      // note: marked handled now; the API-key hook awaits it and sees a rejection there.
      check.catch(() => undefined);
      request.lockoutCheck = check;
      return;
    }
    const lockedForSec = await check;
    if (lockedForSec !== undefined) throw lockedOut(lockedForSec);
  });
}
