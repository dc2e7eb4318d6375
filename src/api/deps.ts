import { QueueEvents, type Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../shared/config.js';
import { createSql, type Sql } from '../shared/db.js';
import { createImportQueue, IMPORT_QUEUE_NAME, type BulkResult, type ImportJobData } from '../shared/import-queue.js';
import { ImportRowsStore } from '../shared/import-rows.js';
import type { Logger } from '../shared/logger.js';
import { createRedis, waitForRedis } from '../shared/redis.js';
import { AuthVersion } from '../shared/auth-version.js';
import { createApiMetrics, type ApiMetrics } from './api-metrics.js';
import { listenForAuthChanges } from './auth/auth-change-listener.js';
import { KeyCache } from './auth/key-cache.js';
import { ImportRunner } from './import-runner.js';
import { AccountQuota } from './limits/account-quota.js';
import { AuthLockout } from './limits/auth-lockout.js';

/** Everything the API's routes and hooks use, created once per process and passed in. */
export interface ApiDeps {
  config: Config;
  log: Logger;
  sql: Sql;
  redis: Redis;
  /** the import queue (producer side), also shown by Bull Board and counted by /metrics */
  queue: Queue<ImportJobData, BulkResult>;
  imports: ImportRunner;
  quota: AccountQuota;
  lockout: AuthLockout;
  authVersion: AuthVersion;
  keyCache: KeyCache;
  metrics: ApiMetrics;
}

export async function createApiDeps(config: Config, log: Logger): Promise<ApiDeps & { close(): Promise<void> }> {
  const sql = createSql(config);
  const redis = createRedis(config, 'command');
  redis.on('error', (err) => log.warn({ err: err.message }, 'redis connection error'));
  const producerRedis = createRedis(config, 'producer');
  producerRedis.on('error', (err) => log.warn({ err: err.message }, 'redis connection error (queue)'));
  await Promise.all([waitForRedis(redis), waitForRedis(producerRedis)]);
  const queue = createImportQueue(config, producerRedis);
  queue.on('error', (err) => log.warn({ err: err.message }, 'import queue error'));
  const eventsRedis = createRedis(config, 'blocking');
  const events = new QueueEvents(IMPORT_QUEUE_NAME, {
    connection: eventsRedis,
    prefix: config.redisPrefix,
  });
  events.on('error', (err) => log.warn({ err: err.message }, 'queue events error'));
  await events.waitUntilReady();

  const keyCache = new KeyCache();
  // note: changes made directly in the tables reach the cache through the database's NOTIFY.
  const authChanges = listenForAuthChanges(sql, () => keyCache.clear(), log);

  return {
    config,
    log,
    sql,
    redis,
    queue,
    imports: new ImportRunner(
      queue,
      new ImportRowsStore(producerRedis, config.redisPrefix),
      events,
      { pickupMs: config.importPickupTimeoutMs, finishMs: config.importTimeoutMs },
      log,
    ),
    quota: new AccountQuota(redis, config.redisPrefix),
    lockout: new AuthLockout(redis, config.redisPrefix),
    authVersion: new AuthVersion(redis, config.redisPrefix),
    keyCache,
    metrics: createApiMetrics(queue, log),
    async close() {
      await authChanges.stop();
      await events.close();
      await queue.close();
      await sql.end({ timeout: 5 });
      eventsRedis.disconnect();
      producerRedis.disconnect();
      redis.disconnect();
    },
  };
}
