import type { RedisClient } from '../shared/infra/redis.js';
import type { Config } from '../shared/infra/config.js';
import { createSql, type Sql } from '../shared/infra/db.js';
import { createImportQueue, type ImportQueue } from '../shared/import/import-queue.js';
import { createFileImportQueue, type FileImportQueue } from '../shared/import/file-import-queue.js';
import { ImportRowsStore } from '../shared/import/rows-store.js';
import type { Logger } from '../shared/infra/logger.js';
import { createRedis, waitForRedis } from '../shared/infra/redis.js';
import { BatchedReads } from '../shared/infra/batched-reads.js';
import { AuthVersion } from '../shared/access/auth-version.js';
import { createApiMetrics, type ApiMetrics } from './api-metrics.js';
import { listenForAuthChanges, type AuthChangeListener } from './auth/auth-change-listener.js';
import { KeyCache } from './auth/key-cache.js';
import { KeyUseRecorder } from './auth/key-use-recorder.js';
import { onRedisReconnect } from './auth/redis-reconnect.js';
import { ImportPreparer, defaultPrepareThreads } from './import/import-preparer.js';
import { ImportRunner, WATCH_AFTER_TIMEOUT_MS } from './import/import-runner.js';
import { ImportReplyListener } from './import/import-reply-listener.js';
import { UploadsInProgress } from './import/uploads-in-progress.js';
import { AccountQuota } from './limits/account-quota.js';
import { AuthLockout } from './limits/auth-lockout.js';
import { AccountInFlight } from './limits/in-flight-slots.js';
import { ProcessSlots } from './limits/process-slots.js';

/** Everything the API's routes and hooks use, created once per process and passed in. */
export interface ApiDeps {
  config: Config;
  log: Logger;
  sql: Sql;
  /** the uploads' own pool: a file's batches are staged on it (FILE_UPLOAD_POOL_MAX) */
  uploadSql: Sql;
  /** the uploads this process receives at once (FILE_UPLOADS_PER_PROCESS) */
  uploadSlots: ProcessSlots;
  /** the uploads this process is receiving, said to be alive every few seconds */
  uploads: UploadsInProgress;
  redis: RedisClient;
  /** single-key reads of every request, sent together (the API-key checks) */
  reads: BatchedReads;
  /** the import queue (producer side), also shown by Bull Board and counted by /metrics */
  queue: ImportQueue;
  /** the file imports' queue (producer side): a job per upload, also shown by Bull Board */
  fileImportQueue: FileImportQueue;
  /** runs one import through the queue and awaits its answer */
  importRunner: ImportRunner;
  quota: AccountQuota;
  lockout: AuthLockout;
  authVersion: AuthVersion;
  /** each account's bulk imports in flight, across replicas (ACCOUNT_MAX_IN_FLIGHT) */
  inFlight: AccountInFlight;
  /** each account's export, across replicas: one at a time (docs/catalogue.md#export) */
  exports: AccountInFlight;
  /** the exports' own pool: an export holds a connection of it while it runs (EXPORT_POOL_MAX) */
  exportSql: Sql;
  /** the exports this process streams at once, one per connection of exportSql */
  exportSlots: ProcessSlots;
  keyCache: KeyCache;
  /** writes the keys' last_used_at, batched */
  keyUse: KeyUseRecorder;
  /** reads bulk bodies off the event loop (IMPORT_PREPARE_THREADS) */
  importPreparer: ImportPreparer;
  metrics: ApiMetrics;
  /** the listener of database notifications; `verified` says whether they are delivered */
  authChanges: AuthChangeListener;
}

export async function createApiDeps(config: Config, log: Logger): Promise<ApiDeps & { close(): Promise<void> }> {
  const sql = createSql(config);
  const uploadSql = createSql(config, { max: config.fileUploadPoolMax });
  const uploads = new UploadsInProgress(uploadSql, log);
  const exportSql = createSql(config, { max: config.exportPoolMax });
  const redis = createRedis(config, 'command');
  redis.on('error', (err: Error) => log.warn({ err: err.message }, 'redis connection error'));
  const producerRedis = createRedis(config, 'producer');
  producerRedis.on('error', (err: Error) => log.warn({ err: err.message }, 'redis connection error (queue)'));
  await Promise.all([waitForRedis(redis), waitForRedis(producerRedis)]);
  const queue = createImportQueue(config, producerRedis);
  queue.on('error', (err) => log.warn({ err: err.message }, 'import queue error'));
  const fileImportQueue = createFileImportQueue(config, producerRedis);
  fileImportQueue.on('error', (err) => log.warn({ err: err.message }, 'file import queue error'));
  // note: the workers' news of the imports they finish; each waiting request polls its job too.
  const importReplies = new ImportReplyListener(config, log);
  await importReplies.subscribed;

  const inFlight = new AccountInFlight(redis, config.redisPrefix, config.accountMaxInFlight, log, {
    // note: the longest a request can hold its slot: its headers and body, the import's pickup and
    // finish, then a job answered 504 watched to its end; a minute for the claim and the record.
    maxHoldMs: config.requestTimeoutMs + config.importPickupTimeoutMs + config.importTimeoutMs + WATCH_AFTER_TIMEOUT_MS + 60_000,
  });
  // note: the in-flight slots' leases under a prefix of their own; an export has no longest hold
  const exports = new AccountInFlight(redis, `${config.redisPrefix}:export`, 1, log);
  const keyCache = new KeyCache();
  const keyUse = new KeyUseRecorder(sql, log);
  onRedisReconnect(redis, () => keyCache.clear());
  // note: changes made directly in the tables reach the cache through the database's NOTIFY, on
  // a connection of its own (DATABASE_LISTEN_URL): LISTEN does not work through transaction pooling.
  const listenSql = createSql({ databaseUrl: config.databaseListenUrl, databasePoolMax: 1 });
  const authChanges = listenForAuthChanges(listenSql, () => keyCache.clear(), log);
  const importRunner = new ImportRunner(
    sql,
    queue,
    new ImportRowsStore(producerRedis, config.redisPrefix),
    { pickupMs: config.importPickupTimeoutMs, finishMs: config.importTimeoutMs },
    log,
    importReplies,
  );
  const quota = new AccountQuota(redis, config.redisPrefix);
  const importPreparer = new ImportPreparer(config.importPrepareThreads ?? defaultPrepareThreads());

  return {
    config,
    log,
    sql,
    uploadSql,
    uploadSlots: new ProcessSlots(config.fileUploadsPerProcess),
    uploads,
    redis,
    reads: new BatchedReads(redis),
    queue,
    fileImportQueue,
    importRunner,
    quota,
    lockout: new AuthLockout(redis, config.redisPrefix),
    authVersion: new AuthVersion(redis, config.redisPrefix),
    inFlight,
    exports,
    exportSql,
    exportSlots: new ProcessSlots(config.exportPoolMax),
    keyCache,
    keyUse,
    importPreparer,
    authChanges,
    metrics: createApiMetrics(queue, log),
    async close() {
      importRunner.close();
      inFlight.close();
      exports.close();
      await quota.close();
      await importPreparer.close();
      await keyUse.close();
      await authChanges.stop();
      await listenSql.end({ timeout: 5 });
      await importReplies.close();
      await queue.close();
      await fileImportQueue.close();
      await sql.end({ timeout: 5 });
      await uploads.close();
      await uploadSql.end({ timeout: 5 });
      await exportSql.end({ timeout: 5 });
      producerRedis.disconnect();
      redis.disconnect();
    },
  };
}
