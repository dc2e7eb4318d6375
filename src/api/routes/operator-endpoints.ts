import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../deps.js';
import { metricsRoutes } from './metrics.js';
import { ADMIN_LOCKOUT_POLICY, AuthLockout } from '../limits/auth-lockout.js';
import { adminBasicAuth } from '../auth/admin-auth.js';
import { BOARD_PATH } from '../plugins/admin-paths.js';

/**
 * Bull Board (`/admin/queues`) and `GET /metrics`, in one context behind HTTP basic auth with
 * ADMIN_USER / ADMIN_PASSWORD. Without those neither is mounted: both answer 404 like any
 * unknown path.
 */
export async function registerOperatorEndpoints(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const credentials = deps.config.admin;
  if (credentials === undefined) {
    deps.log.info(`Bull Board (${BOARD_PATH}) and GET /metrics are disabled: ADMIN_USER and ADMIN_PASSWORD are not set`);
    return;
  }
  // note: loaded only when mounted; Bull Board's UI and its dependencies cost about 19 MB.
  const { registerAdminBoard } = await import('../plugins/admin-board.js');
  await app.register(async (operator) => {
    const lockout = new AuthLockout(deps.redis, deps.config.redisPrefix, ADMIN_LOCKOUT_POLICY, 'admin-auth-failures');
    operator.addHook('onRequest', adminBasicAuth(credentials, lockout, deps.metrics.adminLockouts));
    await operator.register(metricsRoutes, deps);
    await registerAdminBoard(operator, { imports: deps.queue, fileImports: deps.fileImportQueue }, deps.log);
  });
  deps.log.info(`Bull Board (${BOARD_PATH}) and GET /metrics are mounted behind basic auth`);
}
