import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { resolve } from 'node:path';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import { generateApiKey } from '../src/shared/access/api-key.js';
import { ensureDatabase } from '../src/shared/infra/ensure-database.js';
import { migrate } from '../src/shared/infra/migrate.js';
import { freePort } from '../test/support/processes.js';
import { pidsNamed } from './lib/cpu.js';
import { loadableGetTarget } from './lib/get-target.js';
import { runLoad } from './lib/load.js';
import { dropRedisPrefix } from './lib/redis-prefix.js';
import type { BenchAccount } from './lib/stack.js';

/**
 * `npx tsx bench/me-side-by-side.ts DIR [DIR...]`: the compiled API (`DIR/dist`, `npm run build`
 * there) of each checkout, e.g. a `git worktree` of the commit before a change and one of the
 * change, side by side on one database and Redis, each with 400 accounts of three keys of its
 * own, beside the bare route (bench/bare-server.ts); GET /v1/api/me at c=32 in rounds whose order
 * rotates. Per side: req/s and its ratio to the bare route's in the same round, and the CPU per
 * request of its process (every thread), of the load generator and of Redis, with the read and
 * write syscalls per request. Then each side's CPU per request against the first side's, round
 * by round. note: on a machine shared with other work, CPU per request moves much less than
 * req/s, and a difference taken within a round moves least. ROUNDS (21) and PER_ROUND (6,000)
 * from the environment; API_NODE_ARGS are added to the APIs' node flags (e.g. `--cpu-prof`).
 */
const dirs = process.argv.slice(2);
const ROUNDS = Number(process.env.ROUNDS ?? 21);
const PER_ROUND = Number(process.env.PER_ROUND ?? 6_000);
const ACCOUNTS = 400;
const REDIS_URL = 'redis://127.0.0.1:6379';

/** CPU time of every thread of a process so far, in ms, from schedstat's nanoseconds (stat counts 10 ms ticks). */
function cpuMs(pid: number): number {
  let ns = 0;
  for (const thread of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${thread}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // a thread that ended meanwhile
    }
  }
  return ns / 1e6;
}

/** A process's read and write syscalls so far. */
function syscalls(pid: number): [number, number] {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  const field = (name: string) => Number(new RegExp(`${name}: (\\d+)`).exec(io)?.[1]);
  return [field('syscr'), field('syscw')];
}

function start(cwd: string, args: string[], env: Record<string, string>): ChildProcess {
  // note: the Dockerfile's young-generation size, as bench/lib/stack.ts runs the service
  return spawn(process.execPath, ['--max-semi-space-size=4', ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
}

async function waitUp(url: string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    if (await fetch(url).then(() => true, () => false)) return;
    await new Promise((done) => setTimeout(done, 100));
  }
  throw new Error(`${url} never answered`);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const quartiles = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return `${sorted[Math.floor(sorted.length / 4)]} to ${sorted[Math.floor((3 * sorted.length) / 4)]}`;
};

const stamp = Date.now().toString(36);
const server = 'postgres://postgres@127.0.0.1:5432/postgres';
const databaseUrl = Object.assign(new URL(server), { pathname: `/mebench_${stamp}` }).toString();
await ensureDatabase(databaseUrl);
const sql = postgres(databaseUrl, { max: 4, onnotice: () => {} });
await migrate(sql);
const env = {
  DATABASE_URL: databaseUrl,
  REDIS_URL,
  REDIS_PREFIX: `mebench-${stamp}`,
  SESSION_SECRET: 'bench-session-secret-0123456789abcdef-0123456789',
  LOG_LEVEL: 'warn',
  NODE_ENV: 'production',
  HOST: '127.0.0.1',
};

async function createAccounts(count: number): Promise<BenchAccount[]> {
  const created: BenchAccount[] = [];
  for (let a = 0; a < count; a += 1) {
    const [account] = await sql<{ id: string }[]>`
      insert into accounts (display_name, subscription_tier, is_owner, has_completed_onboarding, avatar_url)
      values (${`Bench ${a}`}, 'global', true, true, 'https://cdn.example.com/avatar.png') returning id`;
    const keys = Array.from({ length: 3 }, () => generateApiKey());
    await sql`insert into api_keys ${sql(keys.map((k) => ({ account_id: account!.id, label: 'bench', key_prefix: k.prefix, key_hash: k.hash, scopes: ['listings:write'] })))}`;
    created.push({ id: account!.id, keys: keys.map((k) => k.fullKey) });
  }
  return created;
}

interface Round {
  rps: number;
  cpuUs: number;
  loadGeneratorUs: number;
  redisUs: number;
  reads: number;
  writes: number;
}

const children: ChildProcess[] = [];
// note: the one local Redis, which other work on the machine may use at the same time
const redisPids = pidsNamed('redis-server');
const redisCpuMs = () => redisPids.reduce((sum, pid) => sum + cpuMs(pid), 0);
try {
  const sides: { name: string; pid: number; target: ReturnType<typeof loadableGetTarget>; rounds: Round[] }[] = [];
  for (const dir of dirs) {
    const port = await freePort();
    const api = start(resolve(dir), [...(process.env.API_NODE_ARGS ?? '').split(' ').filter(Boolean), 'dist/api/main.js'], { ...env, PORT: String(port) });
    children.push(api);
    const baseUrl = `http://127.0.0.1:${port}`;
    await waitUp(`${baseUrl}/v1/health`);
    const target = loadableGetTarget({ name: dir, baseUrl, accounts: await createAccounts(ACCOUNTS), path: () => '/v1/api/me', withKey: true, expected: 200 });
    sides.push({ name: dir, pid: api.pid!, target, rounds: [] });
  }
  const barePort = await freePort();
  const bare = start(resolve('.'), ['--import', 'tsx', 'bench/bare-server.ts'], { PORT: String(barePort) });
  children.push(bare);
  const bareUrl = `http://127.0.0.1:${barePort}`;
  await waitUp(`${bareUrl}/bare`);
  const bareTarget = loadableGetTarget({ name: 'bare', baseUrl: bareUrl, accounts: [{ id: '', keys: [] }], path: () => '/bare', withKey: false, expected: 200 });
  sides.push({ name: 'bare', pid: bare.pid!, target: bareTarget, rounds: [] });

  for (const { target } of sides) await runLoad({ concurrency: 32, operations: 6_000, rowsPerOperation: 0, run: target.run, ok: target.ok });
  for (let round = 0; round < ROUNDS; round += 1) {
    for (let turn = 0; turn < sides.length; turn += 1) {
      const side = sides[(turn + round) % sides.length]!;
      const [cpuBefore, redisBefore, loadGeneratorBefore, [readsBefore, writesBefore]] = [cpuMs(side.pid), redisCpuMs(), process.cpuUsage(), syscalls(side.pid)];
      const result = await runLoad({ concurrency: 32, operations: PER_ROUND, rowsPerOperation: 0, run: side.target.run, ok: side.target.ok });
      if (result.errors > 0) throw new Error(`${side.name}: ${result.errors} requests failed (${JSON.stringify(result.statuses)})`);
      const loadGenerator = process.cpuUsage(loadGeneratorBefore);
      const [reads, writes] = syscalls(side.pid);
      const per = (amount: number) => amount / result.requests;
      side.rounds.push({
        rps: result.requestsPerSec,
        cpuUs: Math.round(per((cpuMs(side.pid) - cpuBefore) * 1000)),
        loadGeneratorUs: Math.round(per(loadGenerator.user + loadGenerator.system)),
        redisUs: Math.round(per((redisCpuMs() - redisBefore) * 1000)),
        reads: per(reads - readsBefore),
        writes: per(writes - writesBefore),
      });
    }
  }
  const bareRounds = sides.at(-1)!.rounds;
  console.log(`${ROUNDS} rounds of ${PER_ROUND} requests at c=32; load average now ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  for (const { name, rounds } of sides) {
    const ratio = median(rounds.map((r, i) => r.rps / bareRounds[i]!.rps)).toFixed(3);
    console.log(
      `${name}: ${Math.round(median(rounds.map((r) => r.rps)))} req/s, ratio to bare ${ratio}; CPU per request ${median(rounds.map((r) => r.cpuUs))} µs (quartiles ${quartiles(rounds.map((r) => r.cpuUs))}), ` +
        `load generator ${median(rounds.map((r) => r.loadGeneratorUs))} µs, Redis ${median(rounds.map((r) => r.redisUs))} µs; ` +
        `syscalls per request: ${median(rounds.map((r) => r.reads)).toFixed(2)} reads, ${median(rounds.map((r) => r.writes)).toFixed(2)} writes`,
    );
  }
  const first = sides[0]!;
  for (const { name, rounds } of sides.slice(1, -1)) {
    const differences = rounds.map((r, i) => r.cpuUs - first.rounds[i]!.cpuUs);
    console.log(`${name} against ${first.name}, same round: CPU per request ${median(differences)} µs (quartiles ${quartiles(differences)})`);
  }
  for (const { target } of sides) await target.pool.close();
} finally {
  for (const child of children) child.kill('SIGTERM');
  await new Promise((done) => setTimeout(done, 1_500));
  const redis = new Redis(REDIS_URL);
  await dropRedisPrefix(redis, env.REDIS_PREFIX);
  await redis.quit();
  await sql.end({ timeout: 5 });
  const admin = postgres(server, { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists "mebench_${stamp}" with (force)`);
  await admin.end();
}
