import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { TEST_SESSION_SECRET } from '../support/test-service.js';
import { spawnPart, spawnScript, type ServiceProcess } from '../support/processes.js';
import { redisServerAvailable, scratchDir, startRedisServer, type RedisServer } from '../support/redis-servers.js';
import { testRedisEnv } from '../support/test-redis.js';
import { createTestDatabase, testRedisPrefix, type TestDatabase } from '../support/test-database.js';

const secret = (name: string) => `${name}-${randomBytes(8).toString('hex')}`;
const REDIS_PASSWORD = secret('redis-password');
const WRONG_REDIS_PASSWORD = secret('wrong-redis-password');
const DB_PASSWORD = secret('db-password');

/** How many failures a process must have logged before its output is searched. */
const FAILURES_TO_SEE = 3;
const MASTER_NAME = 'secrets-in-logs';

/** The secret as text, percent-encoded (as in a URL) and as the byte list of a Buffer in JSON. */
function forms(value: string): string[] {
  return [value, encodeURIComponent(value), Array.from(Buffer.from(value)).join(',')];
}

/** Waits for `count` lines matching `pattern`, then stops the process (by its pid) and returns all it wrote. */
async function outputAfter(process: ServiceProcess, pattern: RegExp, count = FAILURES_TO_SEE): Promise<string> {
  try {
    for (let seen = 0; seen < 100; seen += 1) {
      if (process.output.filter((line) => pattern.test(line)).length >= count) break;
      await process.waitForOutput(pattern);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(process.output.filter((line) => pattern.test(line)).length).toBeGreaterThanOrEqual(count);
  } finally {
    await process.stop('SIGKILL');
  }
  return process.output.join('\n');
}

function expectNoSecretIn(output: string, secrets: string[]): void {
  for (const value of secrets) {
    for (const form of forms(value)) expect(output.includes(form), `the output contains ${form.slice(0, 24)}...`).toBe(false);
  }
}

/**
 * The worker and the API as an operator runs them, given a wrong Redis password or a database
 * that refuses them: their output (stdout and stderr, every line) says why, and never holds the
 * password. A real redis-server with --requirepass, a real sentinel naming it, and the run's
 * PostgreSQL.
 */
describe.skipIf(!redisServerAvailable())('secrets in the output of the API and the worker', () => {
  let dir: ReturnType<typeof scratchDir> | undefined;
  let master: RedisServer;
  let sentinel: RedisServer;
  let database: TestDatabase;

  beforeAll(async () => {
    dir = scratchDir('secrets-in-logs');
    master = await startRedisServer(dir.path, [], { password: REDIS_PASSWORD });
    sentinel = await startRedisServer(
      dir.path,
      [`sentinel monitor ${MASTER_NAME} 127.0.0.1 ${master.port} 1`, `sentinel auth-pass ${MASTER_NAME} ${REDIS_PASSWORD}`],
      { sentinel: true },
    );
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await sentinel?.stop();
    await master?.stop();
    await database?.drop();
    dir?.remove();
  });

  const baseEnv = () => ({ DATABASE_URL: database.url, REDIS_PREFIX: testRedisPrefix(), SESSION_SECRET: TEST_SESSION_SECRET, REDIS_CLUSTER_NODES: '' });
  const wrongRedis: [string, () => Record<string, string>][] = [
    [
      'REDIS_PASSWORD (sentinel)',
      () => ({ REDIS_URL: '', REDIS_SENTINELS: `127.0.0.1:${sentinel.port}`, REDIS_SENTINEL_NAME: MASTER_NAME, REDIS_PASSWORD: WRONG_REDIS_PASSWORD }),
    ],
    ['the password in REDIS_URL', () => ({ REDIS_URL: `redis://:${WRONG_REDIS_PASSWORD}@127.0.0.1:${master.port}` })],
  ];

  it.each(wrongRedis)('a worker given a wrong Redis password by %s logs WRONGPASS, without the password', async (_how, env) => {
    const worker = spawnPart('worker', { ...baseEnv(), ...env() });

    const output = await outputAfter(worker, /WRONGPASS/);

    expect(output).toMatch(/"msg":"worker error"/);
    expectNoSecretIn(output, [WRONG_REDIS_PASSWORD, REDIS_PASSWORD]);
  });

  it.each(wrongRedis)('the API given a wrong Redis password by %s logs WRONGPASS, without the password', async (_how, env) => {
    const api = spawnPart('api', { ...baseEnv(), ...env(), HOST: '127.0.0.1', PORT: '0' });

    const output = await outputAfter(api, /WRONGPASS/);

    expectNoSecretIn(output, [WRONG_REDIS_PASSWORD, REDIS_PASSWORD]);
  });

  const server = () => new URL(inject('postgresUrl'));
  const refusingDatabases: [string, () => string, RegExp][] = [
    ['a server that refuses the login', () => `postgres://nobody_${randomBytes(4).toString('hex')}:${DB_PASSWORD}@${server().host}/postgres`, /does not exist/],
    ['no server at all', () => `postgres://svc:${DB_PASSWORD}@127.0.0.1:1/bulk_import`, /ECONNREFUSED/],
  ];

  it.each(refusingDatabases)('the API whose DATABASE_URL names %s says why, without the password, also when a request needs the database', async (_what, url, reason) => {
    const api = spawnPart('api', { ...baseEnv(), ...testRedisEnv(), DATABASE_URL: url(), HOST: '127.0.0.1', PORT: '0' });
    try {
      const line = await api.waitForOutput(/Server listening at/);
      const address = /http:\/\/[\d.]+:\d+/.exec(line)![0];
      // A key lookup needs the database: the request fails, and its error is logged.
      const key = `svc_live_${randomBytes(4).toString('hex')}_${randomBytes(16).toString('hex')}`;
      const res = await fetch(`${address}/v1/api/me`, { headers: { authorization: `Bearer ${key}` } });
      expect(res.status).toBeGreaterThanOrEqual(500);
      // note: the request's one line is written once its answer has gone (docs/operators.md#logs),
      // so it may reach the output just after the client has the answer.
      await api.waitForOutput(/"requestId".*"err"|"err".*"requestId"/, 5_000).catch(() => undefined);
    } finally {
      await api.stop('SIGKILL');
    }
    const output = api.output.join('\n');

    expect(output).toMatch(reason);
    expect(api.output.some((line) => line.includes('"requestId"') && line.includes('"err"')), 'the request\'s error was logged').toBe(true);
    expectNoSecretIn(output, [DB_PASSWORD]);
  });

  it.each(refusingDatabases)('npm run migrate whose DATABASE_URL names %s says why, without the password', async (_what, url, reason) => {
    const migrate = spawnScript('migrate', 'src/migrate-main.ts', { DATABASE_URL: url() });
    const output = await outputAfter(migrate, /migration failed/, 1);

    expect(output).toMatch(reason);
    expectNoSecretIn(output, [DB_PASSWORD]);
  });
});
