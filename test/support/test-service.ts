import { randomBytes } from 'node:crypto';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/api/app.js';
import { createApiDeps, type ApiDeps } from '../../src/api/deps.js';
import { loadConfig, type Config } from '../../src/shared/infra/config.js';
import { createSql, type Sql } from '../../src/shared/infra/db.js';
import { createLogger } from '../../src/shared/infra/logger.js';
import { createAccount, type Account } from '../../src/shared/repositories/accounts.js';
import { signSessionToken } from '../../src/shared/access/session-token.js';
import { startWorker, type RunningWorker } from '../../src/worker/worker.js';
import { testRedisEnv } from './test-redis.js';
import { createTestDatabase, testRedisPrefix, type TestDatabase } from './test-database.js';

export const TEST_SESSION_SECRET = 'test-session-secret-0123456789abcdef0123456789';

export interface TestAccount extends Account {
  sessionToken: string;
}

export interface TestService {
  app: FastifyInstance;
  config: Config;
  deps: ApiDeps;
  /** a separate pool for assertions on the tables */
  sql: Sql;
  worker: RunningWorker | undefined;
  /** every log line the API and worker wrote, parsed */
  logs: Record<string, unknown>[];
  /** raw log output, for searching secrets */
  rawLogs(): string;
  createAccount(input?: Partial<{ tier: string; name: string; avatarUrl: string | null; isOwner: boolean; onboarded: boolean }>): Promise<TestAccount>;
  /** creates a key through the API and returns the full key */
  createKey(account: TestAccount, scopes?: string[], label?: string): Promise<string>;
  request(options: InjectOptions): Promise<LightMyRequestResponse>;
  /** a second API process on the same database and Redis prefix, as a scaled deployment runs it */
  startReplica(): Promise<ApiReplica>;
  close(): Promise<void>;
}

/**
 * Runs `fn` with a worker started late on the service's queue (a service started without one),
 * closing the worker afterwards.
 */
export async function withLateWorker<T>(service: Pick<TestService, 'config' | 'deps'>, fn: () => Promise<T>): Promise<T> {
  const worker = await startWorker(service.config, service.deps.log.child({ part: 'late-worker' }));
  try {
    return await fn();
  } finally {
    await worker.close();
  }
}

export interface ApiReplica {
  request(options: InjectOptions): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export interface TestServiceOptions {
  env?: Record<string, string>;
  /** start an in-process worker (default true) */
  worker?: boolean;
  /** a database made beforehand (createTestDatabase), e.g. to point DATABASE_URL elsewhere; dropped on close */
  database?: TestDatabase;
}

/**
 * A real API (via app.inject) and a real worker on a fresh database cloned from the migrated
 * template and a unique Redis prefix, so test files never see each other's data.
 */
export async function startTestService(options: TestServiceOptions = {}): Promise<TestService> {
  const database = options.database ?? (await createTestDatabase());
  const config = loadConfig({
    DATABASE_URL: database.serviceUrl,
    DATABASE_LISTEN_URL: database.url,
    ...testRedisEnv(),
    REDIS_PREFIX: testRedisPrefix(),
    SESSION_SECRET: TEST_SESSION_SECRET,
    LOG_LEVEL: 'info',
    UPGRADE_URL: 'https://example.test/upgrade',
    // note: the API shares this process with the tests, whose own allocations (a 1,000,000-row
    // body, say) would count toward its heap and resident memory: shedding is off unless a test
    // turns it on.
    OVERLOAD_HEAP_USED_MB: '1000000',
    OVERLOAD_EVENT_LOOP_DELAY_MS: '1000000',
    OVERLOAD_RSS_MB: '1000000',
    ...options.env,
  });
  const chunks: string[] = [];
  const destination = { write: (line: string) => void chunks.push(line) };
  const log = createLogger(config, 'test', destination);

  const deps = await createApiDeps(config, log);
  const app = await buildApp(deps);
  await app.ready();
  const worker = options.worker === false ? undefined : await startWorker(config, log.child({ part: 'worker' }));
  const sql = createSql(config, { max: 4 });

  const service: TestService = {
    app,
    config,
    deps,
    sql,
    worker,
    get logs() {
      return chunks.flatMap((chunk) => chunk.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>));
    },
    rawLogs: () => chunks.join(''),
    async createAccount(input = {}) {
      const account = await createAccount(sql, {
        displayName: input.name ?? `Account ${randomBytes(3).toString('hex')}`,
        tier: input.tier ?? 'enterprise',
        avatarUrl: input.avatarUrl === undefined ? 'https://cdn.example.test/avatar.png' : input.avatarUrl,
        isOwner: input.isOwner ?? true,
        hasCompletedOnboarding: input.onboarded ?? true,
      });
      return { ...account, sessionToken: await signSessionToken(account.id, TEST_SESSION_SECRET, 3600) };
    },
    async createKey(account, scopes = ['listings:write'], label = 'test key') {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/api/keys',
        headers: { authorization: `Bearer ${account.sessionToken}` },
        payload: { label, scopes },
      });
      if (res.statusCode !== 201) throw new Error(`key creation failed: ${res.statusCode} ${res.body}`);
      return (res.json() as { key: string }).key;
    },
    request: (opts) => app.inject(opts),
    async startReplica() {
      const replicaDeps = await createApiDeps(config, log.child({ replica: 2 }));
      const replica = await buildApp(replicaDeps);
      await replica.ready();
      return {
        request: (opts) => replica.inject(opts),
        async close() {
          await replica.close();
          await replicaDeps.close();
        },
      };
    },
    async close() {
      await app.close();
      await deps.close();
      await worker?.close();
      await sql.end({ timeout: 5 });
      await database.drop();
    },
  };
  return service;
}
