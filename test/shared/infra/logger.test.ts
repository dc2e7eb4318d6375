import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { Cluster, Redis } from 'ioredis';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ImportRowsStore } from '../../../src/shared/import/rows-store.js';
import { createLogger, type Logger } from '../../../src/shared/infra/logger.js';
import { validListing } from '../../support/fixtures.js';
import { redisServerAvailable, scratchDir, startRedisServer, type RedisServer } from '../../support/redis-servers.js';
import { databaseUrl } from '../../support/services.js';

const secret = (name: string) => `${name}-${randomBytes(8).toString('hex')}`;
const REDIS_PASSWORD = secret('redis-password');
const WRONG_PASSWORD = secret('wrong-redis-password');
const ROW_SECRET = secret('row-value');
const DB_SECRET = secret('db-password');
const SECRETS = [REDIS_PASSWORD, WRONG_PASSWORD, ROW_SECRET, DB_SECRET];

/** A secret as text, and as the byte list JSON.stringify writes for a Buffer holding it. */
function secretForms(value: string): string[] {
  return [value, Array.from(Buffer.from(value)).join(',')];
}

/** Every way the service's code hands an error to pino. */
const LOG_FORMS: [string, (log: Logger, error: Error) => void][] = [
  ['{ err } (ImportRunner: could not enqueue import)', (log, error) => log.error({ err: error, requestId: 'r-1' }, 'could not enqueue import')],
  ['{ error }', (log, error) => log.error({ error }, 'failed')],
  ['under any other key', (log, error) => log.warn({ cause: error, jobId: 'j-1' }, 'failed')],
  ['the error alone', (log, error) => log.error(error)],
  ['{ err } without a message', (log, error) => log.error({ err: error })],
  ['a child logger bound to it', (log, error) => log.child({ err: error }).error('failed')],
  ['its message alone (deps.ts)', (log, error) => log.warn({ err: error.message }, 'redis connection error')],
];

function logged(error: Error): string[] {
  return LOG_FORMS.map(([, write]) => {
    const lines: string[] = [];
    write(createLogger({ logLevel: 'info' }, 'test', { write: (line: string) => void lines.push(line) }), error);
    expect(lines).toHaveLength(1);
    return lines[0]!;
  });
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  const outcome = await promise.then(
    () => undefined,
    (error: unknown) => error,
  );
  if (!(outcome instanceof Error)) throw new Error('expected a rejection');
  return outcome;
}

/**
 * Real errors from a real redis-server (with a password) and PostgreSQL, each carrying a secret
 * the way its library attaches it, logged in every form: the log keeps why it failed and none of
 * the secrets, in any encoding.
 */
describe.skipIf(!redisServerAvailable())('createLogger: errors in log lines', () => {
  let dir: ReturnType<typeof scratchDir> | undefined;
  let server: RedisServer;
  let redis: Redis;
  let sql: postgres.Sql;
  let debugSql: postgres.Sql;

  beforeAll(async () => {
    dir = scratchDir('logger-errors');
    server = await startRedisServer(dir.path, [], { password: REDIS_PASSWORD });
    redis = server.client();
    const url = databaseUrl(inject('postgresUrl'), 'postgres');
    sql = postgres(url, { max: 1, onnotice: () => {} });
    // note: in debug mode postgres.js makes an error's query and parameters enumerable.
    debugSql = postgres(url, { max: 1, onnotice: () => {}, debug: () => {} });
  });
  afterAll(async () => {
    redis?.disconnect();
    await sql?.end({ timeout: 5 });
    await debugSql?.end({ timeout: 5 });
    await server?.stop();
    dir?.remove();
  });

  async function wrongPasswordError(): Promise<Error> {
    const client = new Redis({ host: '127.0.0.1', port: server.port, password: WRONG_PASSWORD, lazyConnect: true, retryStrategy: () => null });
    try {
      const [[error]] = (await Promise.all([once(client, 'error'), client.connect().catch(() => undefined)])) as [[Error], unknown];
      return error;
    } finally {
      client.disconnect();
    }
  }

  /** note: a temporary table, on the one connection of `db`, gone when it closes */
  async function uniqueViolation(db: postgres.Sql): Promise<Error> {
    await db`create temporary table if not exists secrets_in_logs (value text unique)`;
    await db`truncate secrets_in_logs`;
    await db`insert into secrets_in_logs values (${DB_SECRET})`;
    return rejection(db`insert into secrets_in_logs values (${DB_SECRET})`);
  }

  const CASES: [string, () => Promise<Error>, RegExp][] = [
    ['a wrong Redis password (HELLO ... AUTH default <password>)', wrongPasswordError, /WRONGPASS/],
    [
      'rows stored while Redis is out of memory (SET <key> <rows>)',
      async () => {
        await redis.config('SET', 'maxmemory', '1');
        try {
          const rows = JSON.stringify([validListing({ title: ROW_SECRET })]);
          return await rejection(new ImportRowsStore(redis, 'logger-test').put('job-1', rows));
        } finally {
          await redis.config('SET', 'maxmemory', '0');
        }
      },
      /OOM command not allowed/,
    ],
    ['a command Redis does not know, which it quotes', () => rejection(redis.call('NO-SUCH-COMMAND', REDIS_PASSWORD)), /unknown command 'NO-SUCH-COMMAND'/],
    [
      'a transaction aborted by a command in it (previousErrors)',
      () => rejection(redis.multi().set('k', ROW_SECRET).call('NO-SUCH-COMMAND', ROW_SECRET).exec()),
      /EXECABORT/,
    ],
    [
      'a command of a pipeline aborted when its connection closed (AbortError)',
      async () => {
        // note: a client that reconnects: the commands of a pipeline cut in two are aborted then.
        const victim = new Redis({ host: '127.0.0.1', port: server.port, password: REDIS_PASSWORD }).on('error', () => undefined);
        try {
          const id = String(await victim.client('ID'));
          const results = victim.pipeline().set('k', 'v').blpop(`list-${ROW_SECRET}`, 0).exec();
          await new Promise((resolve) => setTimeout(resolve, 200));
          await redis.client('KILL', 'ID', id);
          const [, [error]] = (await results) as [unknown, [Error]];
          return error;
        } finally {
          victim.disconnect();
        }
      },
      /Command aborted due to connection close/,
    ],
    [
      'a cluster client that could reach no node (ClusterAllFailedError.lastNodeError)',
      async () => {
        const cluster = new Cluster([{ host: '127.0.0.1', port: server.port }], {
          redisOptions: { password: WRONG_PASSWORD },
          clusterRetryStrategy: () => null,
        });
        try {
          const [error] = (await once(cluster, 'error')) as [Error];
          return error;
        } finally {
          cluster.disconnect();
        }
      },
      /Failed to refresh slots cache/,
    ],
    ['a PostgresError whose detail quotes the value', () => uniqueViolation(sql), /duplicate key value violates unique constraint/],
    ['a PostgresError of postgres.js in debug mode (query parameters)', () => uniqueViolation(debugSql), /duplicate key value violates unique constraint/],
    [
      'a connection URL Node could not parse (TypeError.input)',
      async () => {
        try {
          new URL(`postgres://svc:${DB_SECRET}@[db`);
        } catch (error) {
          return error as Error;
        }
        throw new Error('expected an invalid URL');
      },
      /Invalid URL/,
    ],
  ];

  it.each(CASES)('%s: no secret in any form of the line, and the reason is kept', async (_label, produce, reason) => {
    const error = await produce();
    // The error really carries a secret, so the search below can find one.
    const whole = JSON.stringify({ ...error, message: error.message, query: (error as { query?: unknown }).query });
    expect(SECRETS.some((s) => secretForms(s).some((form) => whole.includes(form)))).toBe(true);

    const lines = logged(error);
    lines.forEach((line, i) => {
      const form = LOG_FORMS[i]![0];
      for (const value of SECRETS) {
        for (const text of secretForms(value)) expect(line.includes(text), `${form}: ${line}`).toBe(false);
      }
      expect(line, form).toMatch(reason);
      expect(line, form).not.toMatch(/"command"|"args"|"parameters"|"detail"|"input"/);
    });
  });

  it('keeps the name, stack and code of an error, and the reason of the errors it holds', async () => {
    const [line] = logged(await wrongPasswordError());
    const err = (JSON.parse(line!) as { err: Record<string, unknown> }).err;
    expect(err).toMatchObject({ type: expect.any(String), name: 'ReplyError', message: expect.stringMatching(/^WRONGPASS/) });
    expect(err.stack).toMatch(/^ReplyError: WRONGPASS/);

    const [, produceClusterError] = CASES.find(([label]) => label.includes('ClusterAllFailedError'))!;
    const [clusterLine] = logged(await produceClusterError());
    expect(JSON.parse(clusterLine!)).toMatchObject({ err: { lastNodeError: { name: 'ReplyError', message: expect.stringMatching(/^WRONGPASS/) } } });

    const client = new Redis({ host: '127.0.0.1', port: 1, lazyConnect: true, retryStrategy: () => null });
    const [[refused]] = (await Promise.all([once(client, 'error'), client.connect().catch(() => undefined)])) as [[Error], unknown];
    client.disconnect();
    const [refusedLine] = logged(refused);
    expect(JSON.parse(refusedLine!)).toMatchObject({ err: { code: 'ECONNREFUSED', syscall: 'connect', port: 1 } });
  });
});

describe('createLogger: secrets by their shape, in any field', () => {
  const KEY = `svc_live_${randomBytes(4).toString('hex')}_${randomBytes(16).toString('hex')}`;
  const TOKEN = `eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIke3JhbmRvbX0ifQ.${randomBytes(16).toString('base64url')}`;
  const linesOf = (write: (log: Logger) => void, format: 'json' | 'pretty' = 'json') => {
    const lines: string[] = [];
    write(createLogger({ logLevel: 'info', logFormat: format }, 'test', { write: (line: string) => void lines.push(line) }));
    expect(lines).toHaveLength(1);
    return lines[0]!;
  };

  it.each<[string, (log: Logger) => void]>([
    ['a path', (log) => log.info({ url: `/v1/api/listings/${KEY}` }, 'request completed')],
    ['a path with its underscores percent-encoded', (log) => log.info({ url: `/v1/api/listings/${KEY.replaceAll('_', '%5F')}` }, 'request completed')],
    ['a key in capitals', (log) => log.info({ requestId: KEY.toUpperCase() }, 'request completed')],
    ['a session token', (log) => log.info({ url: `/v1/api/keys/${TOKEN}` }, 'request completed')],
    ['a child logger\'s bindings', (log) => log.child({ requestId: KEY }).info('request completed')],
    ['the message', (log) => log.warn(`refused ${KEY} and ${TOKEN}`)],
    ['an error\'s message', (log) => log.error({ err: new Error(`bad key ${KEY}`) }, 'failed')],
  ])('takes out what is shaped like a key or a token in %s', (_where, write) => {
    for (const format of ['json', 'pretty'] as const) {
      const line = linesOf(write, format);
      for (const secret of [KEY, KEY.toUpperCase(), KEY.replaceAll('_', '%5F'), TOKEN]) expect(line).not.toContain(secret);
      expect(line).toContain('[redacted]');
    }
  });

  it('leaves a line without one as it is: a key prefix and a UUID are no secret', () => {
    const line = linesOf((log) => log.info({ keyPrefix: KEY.slice(9, 17), requestId: '0b6f1c52-0c1e-4b1e-9a55-7a4f3f0b7c11' }, 'request completed'));
    expect(line).toContain(KEY.slice(9, 17));
    expect(line).toContain('0b6f1c52-0c1e-4b1e-9a55-7a4f3f0b7c11');
    expect(line).not.toContain('[redacted]');
  });
});
