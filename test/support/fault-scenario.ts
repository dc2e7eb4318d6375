import postgres from 'postgres';
import { generateApiKey } from '../../src/shared/access/api-key.js';
import { createAccount } from '../../src/shared/repositories/accounts.js';
import { createKeyWithinCap } from '../../src/shared/repositories/api-keys.js';
import { signSessionToken } from '../../src/shared/access/session-token.js';
import { validListing } from './fixtures.js';
import { startApi, startWorkerProcess, type ApiProcess, type ServiceProcess, type SpawnOptions } from './processes.js';
import { testRedisEnv } from './test-redis.js';
import { createTestDatabase, testRedisPrefix, type TestDatabase } from './test-database.js';
import { TEST_SESSION_SECRET } from './test-service.js';

const REDIS_TARGETS = ['REDIS_URL', 'REDIS_CLUSTER_NODES', 'REDIS_SENTINELS'];

export interface FaultScenario {
  env: Record<string, string>;
  database: TestDatabase;
  sql: postgres.Sql;
  apiKey: string;
  accountId: string;
  startApi(extraEnv?: Record<string, string>, options?: SpawnOptions): Promise<ApiProcess>;
  startWorker(extraEnv?: Record<string, string>, options?: SpawnOptions): Promise<ServiceProcess>;
  postListings(baseUrl: string, rowCount: number, headers?: Record<string, string>): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }>;
  countRows(): Promise<{ listings: number; imports: number }>;
  /** another Global account with a key of its own (and a session token for key management) */
  addPartner(name?: string): Promise<{ accountId: string; apiKey: string; keyId: string; sessionToken: string }>;
  close(): Promise<void>;
}

/**
 * Real API and worker processes on a fresh database and Redis prefix, with one Enterprise
 * account and key. Workers give up a dead peer's job after 2 s instead of 30 s.
 */
export async function createFaultScenario(baseEnv: Record<string, string> = {}): Promise<FaultScenario> {
  const database = await createTestDatabase();
  const env = {
    DATABASE_URL: database.url,
    // note: a scenario on a Redis of its own (a sentinel group, say) replaces the run's.
    ...(REDIS_TARGETS.some((name) => name in baseEnv) ? {} : testRedisEnv()),
    REDIS_PREFIX: testRedisPrefix(),
    SESSION_SECRET: TEST_SESSION_SECRET,
    WORKER_LOCK_DURATION_MS: '2000',
    ...baseEnv,
  };
  const sql = postgres(database.url, { max: 2, onnotice: () => {} });
  const account = await createAccount(sql, {
    displayName: 'Fault Tolerant Prints',
    tier: 'global',
    isOwner: true,
    hasCompletedOnboarding: true,
    avatarUrl: null,
  });
  const key = generateApiKey();
  await createKeyWithinCap(sql, { accountId: account.id, label: 'faults', scopes: ['listings:write'], keyPrefix: key.prefix, keyHash: key.hash });
  const processes: ServiceProcess[] = [];

  return {
    env,
    database,
    sql,
    apiKey: key.fullKey,
    accountId: account.id,
    async startApi(extraEnv = {}, options = {}) {
      const api = await startApi({ ...env, ...extraEnv }, options);
      processes.push(api);
      return api;
    },
    async startWorker(extraEnv = {}, options = {}) {
      const worker = await startWorkerProcess({ ...env, ...extraEnv }, options);
      processes.push(worker);
      return worker;
    },
    async postListings(baseUrl, rowCount, headers = {}) {
      const res = await fetch(`${baseUrl}/v1/api/listings/bulk`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.fullKey}`, 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ listings: Array.from({ length: rowCount }, () => validListing()) }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers };
    },
    async countRows() {
      const [row] = await sql<{ listings: number; imports: number }[]>`
        select (select count(*)::int from listings) as listings, (select count(*)::int from imports where state = 'completed') as imports`;
      return row!;
    },
    async addPartner(name = 'Another Print Shop') {
      const partner = await createAccount(sql, { displayName: name, tier: 'global', isOwner: true, hasCompletedOnboarding: true, avatarUrl: null });
      const partnerKey = generateApiKey();
      const created = await createKeyWithinCap(sql, { accountId: partner.id, label: 'faults', scopes: ['listings:write'], keyPrefix: partnerKey.prefix, keyHash: partnerKey.hash });
      if (created === 'cap-reached') throw new Error('a new account cannot be at its key cap');
      return { accountId: partner.id, apiKey: partnerKey.fullKey, keyId: created.id, sessionToken: await signSessionToken(partner.id, TEST_SESSION_SECRET, 3_600) };
    },
    async close() {
      await Promise.all(processes.map((p) => p.stop('SIGKILL')));
      await sql.end({ timeout: 5 });
      await database.drop();
    },
  };
}
