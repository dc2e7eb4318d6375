import type { FastifyInstance } from 'fastify';
import type { ApiMetrics } from '../api-metrics.js';
import { clientIp } from '../client-ip.js';
import type { AuthLockout } from '../limits/auth-lockout.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import { onTakenSegment } from './taken-segments.js';

/**
 * A locked-out IP gets 429 on every `/v1/api/*` request, with a valid key too (docs/access.md#lockout).
 * Runs first among the auth steps; `/v1/health` is never locked out. API-key routes check the
 * lockout themselves, first thing, in the same Redis command as the auth version.
 *
 * note: decided from the route the router matched, not from the request target as sent: the
 * router decodes `/v1/%61pi/keys` and reads the path of `http://host/v1/api/keys`, so testing the
 * raw URL would let those spellings reach key management from a locked-out address. An unknown
 * path under `/v1/api/` is refused too, as before.
 */
export function registerLockoutGuard(app: FastifyInstance, lockout: AuthLockout, metrics: Pick<ApiMetrics, 'authLockouts'>): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const { url, config } = request.routeOptions;
    const underApi = url?.startsWith('/v1/api/') === true || request.url.startsWith('/v1/api/');
    // note: a path with another route's segment (`GET /v1/api/listings/bulk`) is not the matched
    // API-key route's, whose own check would come after its 405 (method-not-allowed.ts)
    if (!underApi || (config.auth === 'api-key' && !onTakenSegment(request, config))) {
      done();
      return;
    }
    lockout.lockedForSec(clientIp(request)).then((lockedForSec) => {
      if (lockedForSec === undefined) return done();
      metrics.authLockouts.inc();
      done(apiErrors.lockedOut(lockedForSec));
    }, done);
  });
}
