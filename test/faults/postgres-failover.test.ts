import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { validListing } from '../support/fixtures.js';
import { postgresServersAvailable, startPrimaryAndStandby, type PrimaryAndStandby } from '../support/postgres-servers.js';
import { startApi, startWorkerProcess, type ServiceProcess } from '../support/processes.js';
import { databaseUrl } from '../support/services.js';
import { testRedisPrefix } from '../support/test-database.js';
import { testRedisEnv } from '../support/test-redis.js';
import { TEST_SESSION_SECRET } from '../support/test-service.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Nothing listens on port 1 (see db-socket.test.ts), so a host there is dead. */
const DEAD_HOST = '127.0.0.1:1';

/** enough for a worker's transaction to be in flight, now and then, when the primary dies */
const ROWS_PER_IMPORT = 200;
const CLIENTS = 4;
/** imports answered 201 before the primary is stopped */
const IMPORTS_BEFORE_FAILOVER = 8;
/** imports each client starts once the standby has been promoted */
const IMPORTS_AFTER_FAILOVER = 3;
const MAX_IMPORTS_PER_CLIENT = 40;
/**
 * Between the primary's death and the promotion: what a failover manager takes to notice (a few
 * seconds here; Patroni's ttl, 30 s by default, in production).
 */
const PROMOTION_DELAY_MS = 2_000;
/** every import in flight at the failover, or sent during it, ends 201 within this */
const FAILOVER_BUDGET_MS = 45_000;
/** an import retried with its key for longer than this is given up (and the test fails) */
const GIVE_UP_AFTER_MS = 60_000;
const IMPORT_TIMEOUT_MS = 15_000;

type Api = ServiceProcess & { baseUrl: string };

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** An npm script, as an operator runs it (`npm run --silent migrate`, `npm run --silent admin -- ...`). */
function npmRun(script: string, args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', ['run', '--silent', script, '--', ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, NODE_ENV: 'test', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

interface Stack {
  env: Record<string, string>;
  apis: Api[];
  workers: ServiceProcess[];
  apiKey: string;
  /** stops every process it started, by pid */
  stop(): Promise<void>;
}

/**
 * What an operator does with a DATABASE_URL: `npm run migrate` (which creates the database),
 * the API and workers as processes of their own, an account through the admin CLI and a key
 * through the API.
 */
async function startStack(databaseUrl: string, workerCount: number): Promise<Stack> {
  const env = {
    DATABASE_URL: databaseUrl,
    ...testRedisEnv(),
    REDIS_PREFIX: testRedisPrefix(),
    SESSION_SECRET: TEST_SESSION_SECRET,
    WORKER_LOCK_DURATION_MS: '2000',
    IMPORT_TIMEOUT_MS: String(IMPORT_TIMEOUT_MS),
  };
  const migrate = await npmRun('migrate', [], env);
  expect(migrate.code, `${migrate.stdout}${migrate.stderr}`).toBe(0);
  expect(migrate.stdout).toMatch(/"msg":"database created"/);
  expect(migrate.stdout).toMatch(/"msg":"migrations applied"/);

  const created = await npmRun('admin', ['accounts', 'create', '--name', 'Failover Prints', '--tier', 'global', '--owner', '--onboarded'], env);
  expect(created.code, created.stderr).toBe(0);
  const { session_token: sessionToken } = JSON.parse(created.stdout) as { session_token: string };

  const processes: ServiceProcess[] = [];
  const stop = async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
  };
  try {
    const apis = [await startApi(env)];
    processes.push(...apis);
    for (let i = 0; i < workerCount; i += 1) processes.push(await startWorkerProcess(env));
    const res = await fetch(`${apis[0]!.baseUrl}/v1/api/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sessionToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ label: 'failover', scopes: ['listings:write'] }),
    });
    expect(res.status).toBe(201);
    const { key } = (await res.json()) as { key: string };
    return { env, apis, workers: processes.filter((p) => p.part === 'worker'), apiKey: key, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function postListings(api: Api, apiKey: string, listings: object[], key?: string): Promise<Response> {
  return fetch(`${api.baseUrl}/v1/api/listings/bulk`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', ...(key === undefined ? {} : { 'idempotency-key': key }) },
    body: JSON.stringify({ listings }),
    signal: AbortSignal.timeout(IMPORT_TIMEOUT_MS + 10_000),
  });
}

describe('a multi-host DATABASE_URL whose first host is dead', () => {
  const server = new URL(inject('postgresUrl'));
  const database = `${inject('runId')}_multihost_${randomBytes(3).toString('hex')}`;
  let stack: Stack | undefined;

  afterAll(async () => {
    await stack?.stop();
    const admin = postgres(databaseUrl(inject('postgresUrl'), 'postgres'), { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists "${database}" with (force)`);
    await admin.end();
  });

  it('npm run migrate creates and migrates the database, the admin CLI, the API and a worker run on it, and an import answers 201', async () => {
    const url = `postgres://${server.username || 'postgres'}${server.password ? `:${server.password}` : ''}@${DEAD_HOST},${server.host}/${database}`;
    stack = await startStack(url, 1);
    const api = stack.apis[0]!;
    expect((await fetch(`${api.baseUrl}/v1/health`)).status).toBe(200);
    const res = await postListings(api, stack.apiKey, [validListing({ title: 'multi-host row' })]);
    expect(res.status).toBe(201);
    const check = postgres(databaseUrl(inject('postgresUrl'), database), { max: 1, onnotice: () => {} });
    try {
      expect(await check`select title from listings`).toEqual([{ title: 'multi-host row' }]);
    } finally {
      await check.end();
    }
  }, 90_000);
});

interface ImportRecord {
  key: string;
  client: number;
  startedAt: number;
  /** when it was answered 201; undefined when it never was */
  finishedAt?: number;
  /** every answer: a status, or the error of a request that got none */
  answers: (number | string)[];
}

/**
 * A synchronous standby is promoted after the primary dies (`pg_ctl stop -m immediate`), while
 * several clients stream imports, each retrying its import with the same Idempotency-Key on a
 * 5xx or a dropped connection, as a partner would. The service's processes are configured with
 * both hosts and `target_session_attrs=primary`, and nobody restarts them.
 */
describe.skipIf(!postgresServersAvailable())('PostgreSQL failover: the primary dies and its synchronous standby is promoted', () => {
  let servers: PrimaryAndStandby | undefined;
  let stack: Stack | undefined;

  beforeAll(async () => {
    servers = await startPrimaryAndStandby({ synchronous: true });
    const { primary, standby } = servers;
    stack = await startStack(`postgres://postgres@127.0.0.1:${primary.port},127.0.0.1:${standby.port}/bulk_import?target_session_attrs=primary`, 2);
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await servers?.stop();
  });

  it('every import retried with its key ends 201 within 45 s, every row once on the promoted server, no process restarted', async () => {
    const { apis, workers, apiKey } = stack!;
    const { primary, standby } = servers!;
    const api = apis[0]!;
    const pids = [...apis, ...workers].map((p) => p.child.pid);
    const tag = `pgfail-${randomBytes(3).toString('hex')}`;
    const imports: ImportRecord[] = [];
    let answered = 0;
    let failoverStartedAt: number | undefined;
    let promotedAt: number | undefined;
    let failingOver: Promise<void> | undefined;

    const failover = async () => {
      await untilWritingTransaction(primary.url('bulk_import'));
      failoverStartedAt = Date.now();
      await servers!.kill(primary);
      await pause(PROMOTION_DELAY_MS);
      servers!.promote(standby);
      promotedAt = Date.now();
    };

    const runImport = async (record: ImportRecord) => {
      const listings = Array.from({ length: ROWS_PER_IMPORT }, (_, i) => validListing({ title: `${record.key} row ${i}` }));
      for (let attempt = 0; Date.now() - record.startedAt < GIVE_UP_AFTER_MS && attempt < 500; attempt += 1) {
        let status: number;
        try {
          const res = await postListings(api, apiKey, listings, record.key);
          status = res.status;
          await res.arrayBuffer();
          record.answers.push(status);
        } catch (error) {
          record.answers.push(String((error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name));
          await pause(250);
          continue;
        }
        if (status === 201) {
          record.finishedAt = Date.now();
          answered += 1;
          return;
        }
        // note: anything but a 5xx (or a 429, which asks to come back later) is an answer the
        // partner cannot retry its way out of; the assertions below report it.
        if (status < 500 && status !== 429) return;
        await pause(250);
      }
    };

    const client = async (index: number) => {
      for (let n = 0; n < MAX_IMPORTS_PER_CLIENT; n += 1) {
        const sentAfterPromotion = imports.filter((r) => r.client === index && promotedAt !== undefined && r.startedAt >= promotedAt).length;
        if (sentAfterPromotion >= IMPORTS_AFTER_FAILOVER) return;
        if (answered >= IMPORTS_BEFORE_FAILOVER && failingOver === undefined) failingOver = failover();
        const record: ImportRecord = { key: `${tag}-${index}-${n}`, client: index, startedAt: Date.now(), answers: [] };
        imports.push(record);
        await runImport(record);
      }
    };

    await Promise.all(Array.from({ length: CLIENTS }, (_, i) => client(i)));
    await failingOver;
    expect(failoverStartedAt, 'the failover never started').toBeDefined();

    // What the partners saw.
    const failedAt = failoverStartedAt!;
    const during = imports.filter((r) => r.finishedAt === undefined || r.finishedAt >= failedAt);
    const answers = imports.flatMap((r) => r.answers);
    const count = (predicate: (a: number | string) => boolean) => answers.filter(predicate).length;
    const longest = Math.max(...imports.map((r) => (r.finishedAt ?? Date.now()) - r.startedAt));
    const lastFinished = Math.max(...during.map((r) => r.finishedAt ?? Infinity));
    console.log(
      [
        `PostgreSQL failover: ${imports.length} imports by ${CLIENTS} clients, ${during.length} in flight at or sent during the failover;`,
        `primary stopped at 0 ms, standby promoted at ${promotedAt! - failedAt} ms;`,
        `longest from an import's first request to its 201: ${longest} ms; last 201 of those at ${lastFinished - failedAt} ms after the primary stopped;`,
        `answers: ${summarise(answers)} (503 x${count((a) => a === 503)}, 504 x${count((a) => a === 504)})`,
      ].join(' '),
    );
    for (const r of during) {
      console.log(`  ${r.key}: +${r.startedAt - failedAt} ms -> ${r.finishedAt === undefined ? 'never 201' : `+${r.finishedAt - failedAt} ms`}: ${r.answers.join(', ')}`);
    }
    console.log(`warnings and errors logged: ${warningsOf([...apis, ...workers])}`);

    expect(imports.filter((r) => r.finishedAt === undefined).map((r) => `${r.key}: ${r.answers.join(', ')}`)).toEqual([]);
    // Some imports were caught by the failover: sent before the promotion, answered after the primary died.
    expect(imports.filter((r) => r.startedAt < promotedAt! && r.finishedAt! > failedAt).length).toBeGreaterThan(0);
    expect(lastFinished - failedAt).toBeLessThanOrEqual(FAILOVER_BUDGET_MS);

    // Every row exactly once, on the server that is now the primary.
    const promoted = postgres(standby.url('bulk_import'), { max: 1, onnotice: () => {} });
    try {
      const [state] = await promoted<{ standby: boolean }[]>`select pg_is_in_recovery() as standby`;
      expect(state!.standby).toBe(false);
      const rows = await promoted<{ key: string; n: number }[]>`
        select split_part(title, ' row ', 1) as key, count(*)::int as n from listings
        where title like ${`${tag}-%`} group by 1 order by 1`;
      expect(rows.filter((r) => r.n !== ROWS_PER_IMPORT)).toEqual([]);
      expect(rows.map((r) => r.key).sort()).toEqual(imports.map((r) => r.key).sort());
    } finally {
      await promoted.end({ timeout: 5 });
    }

    // Nobody restarted anything: the same processes, alive, not shutting down, healthy, importing.
    for (const part of [...apis, ...workers]) {
      expect(part.child.exitCode, `${part.part} exited`).toBeNull();
      // note: an uncaught error makes a process close gracefully first, so it is still alive here.
      expect(part.output.filter((line) => /stopping/.test(line)), `${part.part} is stopping`).toEqual([]);
    }
    expect([...apis, ...workers].map((p) => p.child.pid)).toEqual(pids);
    for (const pid of pids) expect(() => process.kill(pid!, 0)).not.toThrow();
    expect((await fetch(`${api.baseUrl}/v1/health`)).status).toBe(200);
    const fresh = await postListings(api, apiKey, [validListing({ title: `${tag}-after row 0` })], `${tag}-after`);
    expect(fresh.status).toBe(201);
  }, 150_000);
});

/**
 * Waits, for up to 5 s, until some transaction on the server has written and not yet ended, so
 * that the primary dies in the middle of an import's transaction rather than between two.
 */
async function untilWritingTransaction(url: string): Promise<void> {
  const monitor = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const deadline = Date.now() + 5_000;
    while (Date.now() < deadline) {
      const [row] = await monitor<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
        where backend_xid is not null and pid <> pg_backend_pid()`;
      if (row!.n > 0) return;
      await pause(5);
    }
  } finally {
    await monitor.end({ timeout: 1 });
  }
}

/** `api: "import job failed" x2; worker: ...`, from the JSON log lines at warn and above */
function warningsOf(parts: ServiceProcess[]): string {
  const counts = new Map<string, number>();
  for (const part of parts) {
    for (const line of part.output) {
      let entry: { level?: number; msg?: string; err?: { message?: string } };
      try {
        entry = JSON.parse(line) as typeof entry;
      } catch {
        continue;
      }
      if ((entry.level ?? 0) < 40) continue;
      const text = `${part.part}: ${entry.msg ?? ''}${entry.err?.message ? ` (${entry.err.message.slice(0, 120)})` : ''}`;
      counts.set(text, (counts.get(text) ?? 0) + 1);
    }
  }
  return [...counts].map(([text, n]) => `${text} x${n}`).join('; ') || 'none';
}

/** `201 x40, 503 x2` */
function summarise(answers: (number | string)[]): string {
  const counts = new Map<number | string, number>();
  for (const answer of answers) counts.set(answer, (counts.get(answer) ?? 0) + 1);
  return [...counts].map(([answer, n]) => `${answer} x${n}`).join(', ');
}
