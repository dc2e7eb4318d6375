import type { FastifyInstance } from 'fastify';
import { ApiError, retryAfterHeaders } from '../../shared/api-error.js';
import { clientIp } from '../client-ip.js';
import type { AuthLockout } from '../limits/auth-lockout.js';

/**
 * A locked-out IP gets 429 on every `/v1/api/*` request, with a valid key too (decisions B).
 * Runs first among the auth steps; `/v1/health` is never locked out.
 */
export function registerLockoutGuard(app: FastifyInstance, lockout: AuthLockout): void {
  app.addHook('onRequest', async (request) => {
    if (!request.url.startsWith('/v1/api/')) return;
    const lockedForSec = await lockout.lockedForSec(clientIp(request));
    if (lockedForSec !== undefined) {
      throw new ApiError(
        429,
        { error: 'Too many failed authentication attempts', retry_after_sec: lockedForSec },
        retryAfterHeaders(lockedForSec),
      );
    }
  });
}
