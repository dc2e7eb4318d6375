import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import { generateApiKey } from '../../src/shared/access/api-key.js';
import { ensureDatabase } from '../../src/shared/infra/ensure-database.js';
import { migrate } from '../../src/shared/infra/migrate.js';
import { spawnScript, startApi, startWorkerProcess, freePort, type ServiceProcess } from '../../test/support/processes.js';
import { dropRedisPrefix } from './redis-prefix.js';

export interface BenchAccount {
  id: string;
  keys: string[];
}

export interface BenchEnv extends Record<string, string> {
  DATABASE_URL: string;
  REDIS_URL: string;
  REDIS_PREFIX: string;
}

export interface BenchStack {
  env: BenchEnv;
  sql: postgres.Sql;
  redis: Redis;
  accounts: BenchAccount[];
  api: ServiceProcess & { baseUrl: string };
  workers: ServiceProcess[];
  addWorker(): Promise<ServiceProcess>;
  stopWorker(worker: ServiceProcess): Promise<void>;
  startBareServer(): Promise<ServiceProcess & { baseUrl: string }>;
  close(): Promise<void>;
}

const POSTGRES_SERVER = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Peak resident set size of a process, in MB (Linux). */
export function peakRssMb(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /VmHWM:\s+(\d+) kB/.exec(status);
    return match ? Math.round(Number(match[1]) / 1024) : null;
  } catch {
    return null;
  }
}

/**
 * The real stack on a fresh, migrated database: one API process, worker processes, local Redis
 * under a prefix of its own; 100 Global accounts with 10 keys each.
 */
export interface StackOptions {
  workers: number;
  accounts: number;
  keysPerAccount: number;
  /** node flags for the API and worker processes, after the production ones (e.g. `--import` a recorder) */
  nodeArgs?: string[];
  /** extra environment of the API process (e.g. ACCOUNT_MAX_IN_FLIGHT) */
  apiEnv?: Record<string, string>;
  /** extra environment of the worker processes (e.g. FILE_IMPORT_WRITERS) */
  workerEnv?: Record<string, string>;
}

export async function startStack(options: StackOptions): Promise<BenchStack> {
  const stamp = Date.now().toString(36);
  const url = new URL(POSTGRES_SERVER);
  url.pathname = `/bench_${stamp}`;
  const databaseUrl = url.toString();
  await ensureDatabase(databaseUrl);
  const sql = postgres(databaseUrl, { max: 40, onnotice: () => {} });
  await migrate(sql);

  const env: BenchEnv = {
    DATABASE_URL: databaseUrl,
    REDIS_URL,
    REDIS_PREFIX: `bench-${stamp}`,
    SESSION_SECRET: 'bench-session-secret-0123456789abcdef-0123456789',
    LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
  };

  const accounts: BenchAccount[] = [];
  for (let a = 0; a < options.accounts; a += 1) {
    const [account] = await sql<{ id: string }[]>`
      insert into accounts (display_name, subscription_tier, is_owner, has_completed_onboarding, avatar_url)
      values (${`Bench account ${a}`}, 'global', true, true, 'https://cdn.example.com/avatar.png') returning id`;
    const keys = Array.from({ length: options.keysPerAccount }, () => generateApiKey());
    await sql`insert into api_keys ${sql(
      keys.map((k) => ({ account_id: account!.id, label: 'bench', key_prefix: k.prefix, key_hash: k.hash, scopes: ['listings:write'] })),
    )}`;
    accounts.push({ id: account!.id, keys: keys.map((k) => k.fullKey) });
  }

  // note: the processes run the compiled dist/ with plain node, as the Docker image does: tsx
  // would add its loader's memory and start-up to every measurement.
  execFileSync('npm', ['run', '--silent', 'build'], { stdio: 'inherit' });
  const runtime = 'compiled' as const;
  const redis = new Redis(REDIS_URL);
  // note: the Dockerfile's NODE_OPTIONS, so the processes run as in production;
  // BENCH_NODE_ARGS replaces them for experiments (e.g. BENCH_NODE_ARGS="" for V8's defaults).
  const nodeArgs = [...(process.env.BENCH_NODE_ARGS ?? '--max-semi-space-size=4').split(' ').filter(Boolean), ...(options.nodeArgs ?? [])];
  const api = await startApi({ ...env, ...options.apiEnv }, { runtime, nodeArgs });
  const workers: ServiceProcess[] = [];
  // note: workers log one line per job at info, as in production; the API logs two per request,
  // so the bench runs it at warn to measure the service rather than the log pipe.
  const workerEnv = { ...env, LOG_LEVEL: 'info', ...options.workerEnv };
  for (let w = 0; w < options.workers; w += 1) workers.push(await startWorkerProcess(workerEnv, { runtime, nodeArgs }));
  const extra: ServiceProcess[] = [];

  return {
    env,
    sql,
    redis,
    accounts,
    api,
    workers,
    async addWorker() {
      const worker = await startWorkerProcess(workerEnv, { runtime, nodeArgs });
      workers.push(worker);
      return worker;
    },
    async stopWorker(worker) {
      await worker.stop('SIGTERM');
      workers.splice(workers.indexOf(worker), 1);
    },
    async startBareServer() {
      const port = await freePort();
      const bare = spawnScript('bare', 'bench/bare-server.ts', { PORT: String(port) });
      extra.push(bare);
      await bare.waitForOutput(/listening/);
      return Object.assign(bare, { baseUrl: `http://127.0.0.1:${port}` });
    },
    async close() {
      await Promise.all([api, ...workers, ...extra].map((p) => p.stop('SIGTERM')));
      await dropRedisPrefix(redis, env.REDIS_PREFIX);
      await redis.quit();
      await sql.end({ timeout: 5 });
      const admin = postgres(POSTGRES_SERVER, { max: 1, onnotice: () => {} });
      await admin.unsafe(`drop database if exists "bench_${stamp}" with (force)`);
      await admin.end();
    },
  };
}
