import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/shared/infra/config.js';
import { createLogger } from '../../../src/shared/infra/logger.js';
import { startApi, type ServiceProcess } from '../../support/processes.js';
import { testRedisEnv } from '../../support/test-redis.js';
import { createTestDatabase, testRedisPrefix, type TestDatabase } from '../../support/test-database.js';
import { TEST_SESSION_SECRET } from '../../support/test-service.js';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** `node --import` flags under which `pino-pretty` cannot be found, as in the production image. */
const WITHOUT_PINO_PRETTY = ['--import', 'tsx', '--import', './test/support/without-pino-pretty.mjs'];
/** A pretty line: `[12:00:01.234] INFO (api): Server listening at ...` */
const PRETTY_LINE = /^\[\d\d:\d\d:\d\d\.\d{3}\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) \((api|migrate)\): /;
/** INFO in green, as pino-pretty colours it on a terminal. */
const GREEN_INFO = '\u001b[32mINFO';

const secret = (name: string) => `${name}-${randomBytes(8).toString('hex')}`;

function isJson(line: string): boolean {
  try {
    return typeof JSON.parse(line) === 'object';
  } catch {
    return false;
  }
}

describe('LOG_FORMAT in config', () => {
  it.each([
    { env: {}, format: 'auto' },
    { env: { LOG_FORMAT: '' }, format: 'auto' },
    { env: { LOG_FORMAT: 'json' }, format: 'json' },
    { env: { LOG_FORMAT: 'pretty' }, format: 'pretty' },
  ])('$env gives $format', ({ env, format }) => {
    expect(loadConfig(env).logFormat).toBe(format);
  });

  it('refuses any other value, naming the variable', () => {
    expect(() => loadConfig({ LOG_FORMAT: 'text' })).toThrow(/LOG_FORMAT/);
  });
});

describe('createLogger: pretty lines keep the redaction and the serializers of JSON lines', () => {
  const apiKey = `svc_live_${randomBytes(4).toString('hex')}_${randomBytes(16).toString('hex')}`;
  const password = secret('redis-password');
  const sessionToken = secret('session-token');

  function write(format: 'pretty' | 'json'): string {
    const lines: string[] = [];
    const log = createLogger({ logLevel: 'info', logFormat: format }, 'api', { write: (line: string) => void lines.push(line) });
    log.info({ req: { method: 'GET', url: `/v1/api/me?api_key=${apiKey}`, headers: { authorization: `Bearer ${apiKey}` } } }, 'incoming request');
    log.warn({ headers: { authorization: `Bearer ${apiKey}` }, session_token: sessionToken, account: { api_key: apiKey } }, 'by hand');
    // note: ioredis attaches the command to its errors, the password of AUTH among its args.
    const error = Object.assign(new Error('WRONGPASS invalid username-password pair'), { command: { name: 'auth', args: [password] }, code: 'WRONGPASS' });
    log.error({ err: error }, 'redis connection error');
    log.warn({ cause: error }, 'under another key');
    return lines.join('');
  }

  it.each(['pretty', 'json'] as const)('%s: no secret, each field that stays', (format) => {
    const output = write(format);
    for (const value of [apiKey, password, sessionToken]) expect(output).not.toContain(value);
    expect(output).toContain('?[redacted]');
    expect(output).toContain('WRONGPASS invalid username-password pair');
    expect(output).toContain('redis connection error');
  });

  it('pretty lines are not JSON, and say the time, level, name and message first', () => {
    const lines = write('pretty').split('\n').filter((line) => /^\[/.test(line));
    expect(lines).toHaveLength(4);
    for (const line of lines) expect(line).toMatch(PRETTY_LINE);
    expect(lines[0]).toMatch(/ INFO \(api\): incoming request$/);
  });

  it('with a destination and LOG_FORMAT unset, writes JSON lines: only stdout on a terminal is pretty', () => {
    const lines: string[] = [];
    createLogger(loadConfig({}), 'api', { write: (line: string) => void lines.push(line) }).info('hello');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ name: 'api', msg: 'hello' });
  });
});

/** The API as `npm run start:api` runs it, its stdout and stderr a pipe, as in test/support/processes.ts. */
describe('LOG_FORMAT: the lines of a real API process', () => {
  let database: TestDatabase;
  let env: Record<string, string>;
  const started: ServiceProcess[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    env = { DATABASE_URL: database.url, ...testRedisEnv(), REDIS_PREFIX: testRedisPrefix(), SESSION_SECRET: TEST_SESSION_SECRET };
  });
  afterAll(async () => {
    await Promise.all(started.map((process) => process.stop('SIGKILL')));
    await database?.drop();
  });

  async function api(extraEnv: Record<string, string>, nodeArgs: string[] = []) {
    const running = await startApi({ ...env, ...extraEnv }, { nodeArgs });
    started.push(running);
    await running.waitForOutput(/Server listening at/);
    return running;
  }

  it.each([
    { name: 'LOG_FORMAT unset, stdout not a terminal', LOG_FORMAT: '' },
    { name: 'LOG_FORMAT=json', LOG_FORMAT: 'json' },
  ])('$name: every line is JSON', async ({ LOG_FORMAT }) => {
    const running = await api({ LOG_FORMAT });
    // note: not the health check, whose line is at debug (docs/operators.md#logs)
    await fetch(`${running.baseUrl}/v1/nowhere`);
    await running.waitForOutput(/request completed/);
    await running.stop();
    expect(running.output.length).toBeGreaterThan(2);
    for (const line of running.output) expect(isJson(line), line).toBe(true);
  });

  it('LOG_FORMAT=pretty: pretty lines, and a key sent in the URL or a header is in none of them', async () => {
    const key = `svc_live_${randomBytes(4).toString('hex')}_${randomBytes(16).toString('hex')}`;
    const running = await api({ LOG_FORMAT: 'pretty' });
    const res = await fetch(`${running.baseUrl}/v1/api/me?api_key=${key}`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(401);
    await running.waitForOutput(/request completed/);
    await running.stop();
    const output = running.output.join('\n');
    expect(running.output.filter((line) => isJson(line))).toEqual([]);
    expect(running.output.find((line) => / INFO \(api\): Server listening at /.test(line))).toMatch(PRETTY_LINE);
    expect(output).toContain('/v1/api/me?[redacted]');
    expect(output).not.toContain(key);
    expect(output).not.toContain(key.slice(-32));
  });

  it('LOG_FORMAT=pretty without pino-pretty installed (the production image): JSON lines after one warning', async () => {
    const running = await api({ LOG_FORMAT: 'pretty' }, WITHOUT_PINO_PRETTY);
    await running.stop();
    for (const line of running.output) expect(isJson(line), line).toBe(true);
    const warnings = running.output.filter((line) => line.includes('pino-pretty'));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0]!)).toMatchObject({ level: 40, name: 'api' });
  });

  it('LOG_FORMAT unset without pino-pretty installed: JSON lines and no warning', async () => {
    const running = await api({ LOG_FORMAT: '' }, WITHOUT_PINO_PRETTY);
    await running.stop();
    for (const line of running.output) expect(isJson(line), line).toBe(true);
    expect(running.output.filter((line) => line.includes('pino-pretty'))).toEqual([]);
  });
});

/**
 * On a terminal: `script` runs `npm run migrate` on a pseudo-terminal of its own and copies what
 * it shows. A one-shot, so nothing is left running.
 */
describe.skipIf(!existsSync('/usr/bin/script'))('LOG_FORMAT unset, stdout a terminal', () => {
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });

  function onTerminal(extraEnv: Record<string, string>): Promise<string> {
    // note: colours follow the terminal unless NO_COLOR or FORCE_COLOR is set at all, even empty.
    const { NO_COLOR: _noColour, FORCE_COLOR: _forceColour, ...inherited } = process.env;
    const child = spawn('/usr/bin/script', ['-qec', `${process.execPath} --import tsx src/migrate-main.ts`, '/dev/null'], {
      cwd: REPO_ROOT,
      env: { ...inherited, TERM: 'xterm-256color', NODE_ENV: 'test', LOG_LEVEL: 'info', DATABASE_URL: database.url, ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      child.once('error', reject);
      child.once('exit', (code) => {
        clearTimeout(timer);
        const output = Buffer.concat(chunks).toString('utf8');
        if (code === 0) resolve(output);
        else reject(new Error(`migrate on a terminal exited ${code}:\n${output}`));
      });
    });
  }

  it('writes pretty, coloured lines', async () => {
    const output = await onTerminal({ LOG_FORMAT: '' });
    const lines = output.split(/\r?\n/).filter(Boolean);
    expect(lines.some((line) => isJson(line))).toBe(false);
    expect(output).toContain(GREEN_INFO);
    expect(lines.find((line) => line.includes('database schema is up to date'))).toMatch(/INFO/);
  });

  it('LOG_FORMAT=json still writes JSON there', async () => {
    const output = await onTerminal({ LOG_FORMAT: 'json' });
    const lines = output.split(/\r?\n/).filter(Boolean);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(isJson(line), line).toBe(true);
  });
});
