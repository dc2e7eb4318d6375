import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { expect } from 'vitest';
import { validListing } from './fixtures.js';
import { startApi, startWorkerProcess, type ApiProcess, type ServiceProcess } from './processes.js';
import { tally } from './tally.js';
import { reportStuckImports } from './stuck-import-report.js';
import { testRedisPrefix } from './test-database.js';
import { testRedisEnv } from './test-redis.js';
import { TEST_SESSION_SECRET } from './test-service.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** enough for a worker's transaction to be in flight, now and then, when the primary dies */
const ROWS_PER_IMPORT = 200;
const CLIENTS = 4;
/** imports answered 201 before the primary is stopped */
const IMPORTS_BEFORE_FAILOVER = 8;
/** imports each client starts once the standby has been promoted */
const IMPORTS_AFTER_FAILOVER = 3;
const MAX_IMPORTS_PER_CLIENT = 60;
/** an import retried with its key for longer than this is given up (and the test fails) */
const GIVE_UP_AFTER_MS = 60_000;
const RETRY_PAUSE_MS = 250;
export const IMPORT_TIMEOUT_MS = 15_000;

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

export interface Stack {
  env: Record<string, string>;
  apis: ApiProcess[];
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
export async function startStack(databaseUrl: string, workerCount: number): Promise<Stack> {
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

export async function postListings(api: ApiProcess, apiKey: string, listings: object[], key?: string): Promise<Response> {
  return fetch(`${api.baseUrl}/v1/api/listings/bulk`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', ...(key === undefined ? {} : { 'idempotency-key': key }) },
    body: JSON.stringify({ listings }),
    signal: AbortSignal.timeout(IMPORT_TIMEOUT_MS + 10_000),
  });
}

interface ImportRecord {
  key: string;
  client: number;
  startedAt: number;
  /** when it was answered 201; undefined when it never was */
  finishedAt?: number;
  /** every answer: a status, or the error of a request that got none */
  answers: (number | string)[];
  /** when each answer came */
  answeredAt: number[];
  /** the import's id, from the last answer's `Location` that had one */
  importId?: string;
}

/** When the primary died and when the new one took over, as the failover reports them. */
export interface FailoverTimes {
  diedAt: number;
  promotedAt: number;
}

export interface FailoverStream {
  tag: string;
  imports: ImportRecord[];
  times: FailoverTimes;
}

/**
 * Several clients send listings imports, each with rows whose titles name its Idempotency-Key,
 * and each retries its import with the same key on a 5xx, a 429 or a dropped connection, as a
 * partner would. Once a few imports have been answered, `failover` runs; the clients go on until
 * each has sent a few imports after it.
 */
export async function streamImportsThroughFailover(stack: Stack, failover: () => Promise<FailoverTimes>): Promise<FailoverStream> {
  const api = stack.apis[0]!;
  const tag = `pgfail-${randomBytes(3).toString('hex')}`;
  const imports: ImportRecord[] = [];
  let answered = 0;
  let times: FailoverTimes | undefined;
  let failingOver: Promise<void> | undefined;

  const runImport = async (record: ImportRecord) => {
    const listings = Array.from({ length: ROWS_PER_IMPORT }, (_, i) => validListing({ title: `${record.key} row ${i}` }));
    for (let attempt = 0; Date.now() - record.startedAt < GIVE_UP_AFTER_MS && attempt < 1_000; attempt += 1) {
      let status: number;
      try {
        const res = await postListings(api, stack.apiKey, listings, record.key);
        status = res.status;
        await res.arrayBuffer();
        record.answers.push(status);
        record.answeredAt.push(Date.now());
        record.importId = res.headers.get('location')?.split('/').pop() ?? record.importId;
      } catch (error) {
        record.answers.push(String((error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name));
        record.answeredAt.push(Date.now());
        await pause(RETRY_PAUSE_MS);
        continue;
      }
      if (status === 201) {
        record.finishedAt = Date.now();
        answered += 1;
        return;
      }
      // note: anything but a 5xx (or a 429, which asks to come back later) is an answer the
      // partner cannot retry its way out of; expectFailoverSurvived reports it.
      if (status < 500 && status !== 429) return;
      await pause(RETRY_PAUSE_MS);
    }
  };

  const client = async (index: number) => {
    for (let n = 0; n < MAX_IMPORTS_PER_CLIENT; n += 1) {
      const sentAfter = imports.filter((r) => r.client === index && times !== undefined && r.startedAt >= times.promotedAt).length;
      if (sentAfter >= IMPORTS_AFTER_FAILOVER) return;
      if (answered >= IMPORTS_BEFORE_FAILOVER && failingOver === undefined) {
        failingOver = failover().then((t) => {
          times = t;
        });
      }
      const record: ImportRecord = { key: `${tag}-${index}-${n}`, client: index, startedAt: Date.now(), answers: [], answeredAt: [] };
      imports.push(record);
      await runImport(record);
    }
  };

  await Promise.all(Array.from({ length: CLIENTS }, (_, i) => client(i)));
  await failingOver;
  expect(times, 'the failover never ran').toBeDefined();
  return { tag, imports, times: times! };
}

/**
 * Logs what the partners saw, then checks that every import ended 201 within `budgetMs` of the
 * death with its rows once on the new primary (`promotedUrl`), and that nobody restarted a
 * process: the same pids, alive, not shutting down, healthy, and importing.
 */
export async function expectFailoverSurvived(label: string, stack: Stack, stream: FailoverStream, promotedUrl: string, budgetMs: number): Promise<void> {
  const { imports, tag } = stream;
  const { diedAt, promotedAt } = stream.times;
  const during = imports.filter((r) => r.finishedAt === undefined || r.finishedAt >= diedAt);
  const answers = imports.flatMap((r) => r.answers);
  const count = (status: number) => answers.filter((a) => a === status).length;
  const longest = Math.max(...imports.map((r) => (r.finishedAt ?? Date.now()) - r.startedAt));
  const lastFinished = Math.max(...during.map((r) => r.finishedAt ?? Infinity));
  console.log(
    [
      `${label}: ${imports.length} imports by ${CLIENTS} clients, ${during.length} in flight at or sent during the failover;`,
      `primary dead at 0 ms, new primary at ${promotedAt - diedAt} ms;`,
      `longest from an import's first request to its 201: ${longest} ms; last 201 of those at ${lastFinished - diedAt} ms after the death;`,
      `answers: ${tally(answers)} (503 x${count(503)}, 504 x${count(504)})`,
    ].join(' '),
  );
  for (const r of during) {
    console.log(`  ${r.key}: +${r.startedAt - diedAt} ms -> ${r.finishedAt === undefined ? 'never 201' : `+${r.finishedAt - diedAt} ms`}: ${r.answers.join(', ')}`);
  }
  const parts = [...stack.apis, ...stack.workers];
  console.log(`warnings and errors logged: ${warningsOf(parts)}`);
  const stuck = imports
    .filter((r) => r.finishedAt === undefined)
    .map((r) => ({ key: r.key, importId: r.importId, answers: r.answers.map((a, i) => `${a} at +${r.answeredAt[i]! - diedAt} ms`) }));
  if (stuck.length > 0) console.log(`imports that never got their 201:\n${await reportStuckImports(stuck, stack.env, promotedUrl, parts)}`);

  expect(imports.filter((r) => r.finishedAt === undefined).map((r) => `${r.key}: ${r.answers.join(', ')}`)).toEqual([]);
  // Some imports were caught by the failover: sent before the new primary, answered after the death.
  expect(imports.filter((r) => r.startedAt < promotedAt && r.finishedAt! > diedAt).length).toBeGreaterThan(0);
  expect(lastFinished - diedAt).toBeLessThanOrEqual(budgetMs);

  // Every row exactly once, on the server that is now the primary.
  const promoted = postgres(promotedUrl, { max: 1, onnotice: () => {} });
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

  for (const part of parts) {
    expect(part.child.exitCode, `${part.part} exited`).toBeNull();
    // note: an uncaught error makes a process close gracefully first, so it is still alive here.
    expect(part.output.filter((line) => /stopping/.test(line)), `${part.part} is stopping`).toEqual([]);
    expect(() => process.kill(part.child.pid!, 0)).not.toThrow();
  }
  const api = stack.apis[0]!;
  expect((await fetch(`${api.baseUrl}/v1/health`)).status).toBe(200);
  const fresh = await postListings(api, stack.apiKey, [validListing({ title: `${tag}-after row 0` })], `${tag}-after`);
  expect(fresh.status).toBe(201);

  // The API listens for auth changes again, on the new primary: a key revoked directly in the
  // tables is refused within a second or two, not after the key cache's 30 s.
  const me = () => fetch(`${api.baseUrl}/v1/api/me`, { headers: { authorization: `Bearer ${stack.apiKey}` } }).then((res) => res.status);
  expect(await me()).toBe(200);
  const revoker = postgres(promotedUrl, { max: 1, onnotice: () => {} });
  try {
    await revoker`update api_keys set is_revoked = true, revoked_at = now()`;
  } finally {
    await revoker.end({ timeout: 5 });
  }
  const revokedAt = Date.now();
  let status = 200;
  while (status === 200 && Date.now() - revokedAt < 5_000) {
    await pause(100);
    status = await me();
  }
  expect(status, 'a key revoked in the tables after the failover').toBe(401);
  console.log(`${label}: a key revoked in the tables was refused ${Date.now() - revokedAt} ms later`);
}

/**
 * Waits, for up to 5 s, until some transaction on the server has written and not yet ended, so
 * that the primary dies in the middle of an import's transaction rather than between two.
 */
export async function untilWritingTransaction(url: string): Promise<void> {
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
