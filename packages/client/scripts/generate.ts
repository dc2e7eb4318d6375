/**
 * `npm run client:generate`: builds the API app in this process, reads the OpenAPI document it
 * serves (GET /v1/openapi.json, through app.inject: nothing listens) and writes the package's
 * generated types. Needs the PostgreSQL and Redis the app connects to when it is built:
 * DATABASE_URL and REDIS_URL, by default the local ones.
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { buildApp } from '../../../src/api/app.js';
import { createApiDeps } from '../../../src/api/deps.js';
import { loadConfig } from '../../../src/shared/infra/config.js';
import { masterNodes } from '../../../src/shared/infra/redis.js';
import { createLogger } from '../../../src/shared/infra/logger.js';
import { renderClientTypes } from './render-client-types.js';

const config = loadConfig({
  DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  // note: a prefix of its own, so nothing of a running service's keys is touched.
  REDIS_PREFIX: `client-generate-${randomBytes(4).toString('hex')}`,
  LOG_LEVEL: 'warn',
});
const deps = await createApiDeps(config, createLogger(config, 'client-generate'));
try {
  const app = await buildApp(deps);
  try {
    const res = await app.inject({ method: 'GET', url: '/v1/openapi.json' });
    if (res.statusCode !== 200) throw new Error(`GET /v1/openapi.json answered ${res.statusCode}`);
    const files = await renderClientTypes(res.json());
    for (const [name, text] of Object.entries(files)) {
      await writeFile(new URL(`../src/generated/${name}`, import.meta.url), text);
    }
    process.stdout.write(`wrote packages/client/src/generated/ from API document ${res.json<{ info: { version: string } }>().info.version}\n`);
  } finally {
    await app.close();
  }
} finally {
  // note: building the app creates its queues' keys under the prefix; they are this run's alone.
  for (const node of masterNodes(deps.redis)) {
    const keys = await node.keys(`${config.redisPrefix}:*`);
    if (keys.length > 0) await node.del(...keys);
  }
  await deps.close();
}
