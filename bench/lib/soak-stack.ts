import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import { ensureDatabase } from '../../src/shared/infra/ensure-database.js';
import { migrate } from '../../src/shared/infra/migrate.js';
import { spawnPart, startApi, type ServiceProcess, type SpawnOptions } from '../../test/support/processes.js';
import type { SoakStack } from './soak-run.js';
import { dropRedisPrefix } from './redis-prefix.js';

const POSTGRES_SERVER = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
/** note: a replacement worker starts while the others are busy on two shared cores. */
const WORKER_START_TIMEOUT_MS = 60_000;

/** Starts the API and workers and keeps every process it spawned, so each can be stopped by its pid. */
export interface PartStarter {
  startApi: SoakStack['startApi'];
  startWorker: SoakStack['startWorker'];
  /** SIGKILLs every process still running at once: for a second Ctrl-C */
  killAll: () => void;
  /** SIGKILLs every process still running and waits for each to exit */
  stopAll: () => Promise<void>;
}

export function partStarter(env: Record<string, string>, options: SpawnOptions): PartStarter {
  const processes: ServiceProcess[] = [];
  return {
    async startApi(extraEnv = {}) {
      const api = await startApi({ ...env, ...extraEnv }, options);
      processes.push(api);
      return api;
    },
    async startWorker(extraEnv = {}) {
      // note: spawned here rather than through startWorkerProcess, which leaves a worker that
      // is slow to start running with no one holding it; this one is tracked from the start and
      // killed when it does not start in time.
      const worker = spawnPart('worker', { ...env, ...extraEnv }, options);
      processes.push(worker);
      try {
        await worker.waitForOutput(/worker started/, WORKER_START_TIMEOUT_MS);
      } catch (error) {
        await worker.stop('SIGKILL');
        throw error;
      }
      return worker;
    },
    killAll() {
      for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    },
    async stopAll() {
      await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    },
  };
}

export interface LocalSoakStack extends SoakStack {
  database: string;
  killAll(): void;
  /** stops what is still running, deletes the Redis keys under the prefix and drops the database */
  close(): Promise<void>;
}

/**
 * The soak's stack on the local PostgreSQL and Redis: a fresh migrated database and a Redis
 * prefix of its own. The API and the workers run from the TypeScript sources through tsx, as
 * `npm run start:api` and `npm run start:worker` do, with the Docker image's Node flags.
 */
export async function startLocalSoakStack(): Promise<LocalSoakStack> {
  const stamp = `${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const database = `soak_${stamp}`;
  const url = new URL(POSTGRES_SERVER);
  url.pathname = `/${database}`;
  const databaseUrl = url.toString();
  await ensureDatabase(databaseUrl);
  const sql = postgres(databaseUrl, { max: 4, onnotice: () => {} });
  const env = {
    DATABASE_URL: databaseUrl,
    REDIS_URL,
    REDIS_PREFIX: `soak-${stamp}`,
    SESSION_SECRET: 'soak-session-secret-0123456789abcdef-0123456789',
    NODE_ENV: 'production',
    LOG_LEVEL: 'info',
  };
  const parts = partStarter(env, { runtime: 'source', nodeArgs: (process.env.BENCH_NODE_ARGS ?? '--max-semi-space-size=4').split(' ').filter(Boolean) });
  const close = async () => {
    await parts.stopAll();
    const redis = new Redis(REDIS_URL);
    try {
      await dropRedisPrefix(redis, env.REDIS_PREFIX);
    } finally {
      redis.disconnect();
    }
    await sql.end({ timeout: 5 });
    const admin = postgres(POSTGRES_SERVER, { max: 1, onnotice: () => {} });
    try {
      await admin.unsafe(`drop database if exists "${database}" with (force)`);
    } finally {
      await admin.end();
    }
  };
  try {
    await migrate(sql);
  } catch (error) {
    await close();
    throw error;
  }
  return { env, sql, database, startApi: parts.startApi, startWorker: parts.startWorker, killAll: parts.killAll, close };
}
