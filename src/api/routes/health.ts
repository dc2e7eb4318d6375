import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../deps.js';
import { SERVICE_VERSION } from '../version.js';

const CHECK_TIMEOUT_MS = 1_500;

async function check(probe: () => Promise<unknown>): Promise<'ok' | 'down'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'down'>((resolve) => {
    timer = setTimeout(() => resolve('down'), CHECK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([probe().then(() => 'ok' as const, () => 'down' as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** `GET /v1/health` (spec 4.5, decisions E): no key, no limits; 503 naming the failing check. */
export async function healthRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const startedAt = Date.now();
  app.get('/v1/health', async (_request, reply) => {
    const [postgres, redis] = await Promise.all([check(() => deps.sql`select 1`), check(() => deps.redis.ping())]);
    const healthy = postgres === 'ok' && redis === 'ok';
    return reply.code(healthy ? 200 : 503).send({
      status: healthy ? 'ok' : 'degraded',
      version: SERVICE_VERSION,
      uptime_sec: Math.floor((Date.now() - startedAt) / 1000),
      checks: { postgres, redis },
      timestamp: new Date().toISOString(),
    });
  });
}
