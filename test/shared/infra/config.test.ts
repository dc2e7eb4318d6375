import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/shared/infra/config.js';
import { prefixHashTag } from '../../../src/shared/infra/redis-target.js';

describe('loadConfig: which Redis (REDIS_URL, REDIS_CLUSTER_NODES, REDIS_SENTINELS)', () => {
  it('defaults to one server at redis://127.0.0.1:6379 with the prefix bulk-import', () => {
    const config = loadConfig({});
    expect(config.redis).toEqual({ mode: 'single', url: 'redis://127.0.0.1:6379', tls: false });
    expect(config.redisPrefix).toBe('bulk-import');
  });

  it('reads a cluster, its credentials and TLS', () => {
    const config = loadConfig({
      REDIS_CLUSTER_NODES: '10.0.0.1:7000, 10.0.0.2:7001,[::1]:7002',
      REDIS_PREFIX: '{bulk-import}',
      REDIS_USERNAME: 'svc',
      REDIS_PASSWORD: 'secret',
      REDIS_TLS: 'true',
    });
    expect(config.redis).toEqual({
      mode: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
        { host: '::1', port: 7002 },
      ],
      username: 'svc',
      password: 'secret',
      tls: true,
    });
  });

  it('reads sentinels with the master name and the sentinels\' password', () => {
    const config = loadConfig({ REDIS_SENTINELS: 's1:26379,s2:26379', REDIS_SENTINEL_NAME: 'mymaster', REDIS_SENTINEL_PASSWORD: 'pw' });
    expect(config.redis).toEqual({
      mode: 'sentinel',
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26379 },
      ],
      name: 'mymaster',
      sentinelPassword: 'pw',
      sentinelTls: false,
      username: undefined,
      password: undefined,
      tls: false,
    });
  });

  it.each([
    [{ REDIS_URL: 'redis://a:6379', REDIS_CLUSTER_NODES: 'b:7000', REDIS_PREFIX: '{x}' }, 'REDIS_URL, REDIS_CLUSTER_NODES: set only one of'],
    [{ REDIS_URL: 'redis://a:6379', REDIS_SENTINELS: 's:26379', REDIS_SENTINEL_NAME: 'm' }, 'REDIS_URL, REDIS_SENTINELS: set only one of'],
    [{ REDIS_CLUSTER_NODES: 'b:7000', REDIS_SENTINELS: 's:26379', REDIS_PREFIX: '{x}' }, 'REDIS_CLUSTER_NODES, REDIS_SENTINELS: set only one of'],
    [{ REDIS_CLUSTER_NODES: 'b:7000' }, 'REDIS_PREFIX: on a Redis Cluster it needs a hash tag, e.g. {bulk-import}'],
    [{ REDIS_CLUSTER_NODES: 'b:7000', REDIS_PREFIX: 'bulk-{}' }, 'REDIS_PREFIX: on a Redis Cluster it needs a hash tag'],
    [{ REDIS_CLUSTER_NODES: 'b', REDIS_PREFIX: '{x}' }, 'REDIS_CLUSTER_NODES: "b" is not host:port'],
    [{ REDIS_CLUSTER_NODES: 'b:70000', REDIS_PREFIX: '{x}' }, 'REDIS_CLUSTER_NODES: "b:70000" is not host:port'],
    [{ REDIS_CLUSTER_NODES: ' , ', REDIS_PREFIX: '{x}' }, 'REDIS_CLUSTER_NODES: give at least one host:port'],
    [{ REDIS_SENTINELS: 's:26379' }, 'REDIS_SENTINEL_NAME: required with REDIS_SENTINELS'],
    [{ REDIS_URL: 'http://a:6379' }, 'REDIS_URL: must start with redis:// or rediss://'],
    [{ REDIS_PREFIX: 'bulk import' }, 'REDIS_PREFIX: letters, digits and _.:-{} only'],
  ])('refuses %j at start, naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('accepts a hash-tagged prefix on one server too, so moving to a cluster keeps the keys where they are', () => {
    expect(loadConfig({ REDIS_PREFIX: '{bulk-import}' }).redisPrefix).toBe('{bulk-import}');
  });
});

describe('prefixHashTag', () => {
  it.each([
    ['{bulk-import}', 'bulk-import'],
    ['acme:{bulk}:v2', 'bulk'],
    ['bulk-import', undefined],
    ['{}bulk', undefined],
    ['bulk{', undefined],
    ['{a}{b}', 'a'],
  ])('reads %s as %s', (prefix, tag) => {
    expect(prefixHashTag(prefix)).toBe(tag);
  });
});

describe('loadConfig: DATABASE_LISTEN_URL', () => {
  it('defaults to DATABASE_URL', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://u@db:5432/app' });
    expect(config.databaseListenUrl).toBe('postgres://u@db:5432/app');
  });

  it('may point elsewhere than DATABASE_URL (PostgreSQL itself behind a transaction pool)', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://u@pgbouncer:6432/app?prepare=false', DATABASE_LISTEN_URL: 'postgres://u@db:5432/app' });
    expect(config.databaseListenUrl).toBe('postgres://u@db:5432/app');
  });
});

describe('loadConfig: DATABASE_URL and DATABASE_LISTEN_URL (one host or several)', () => {
  it.each([
    ['postgres://postgres@127.0.0.1:5433,127.0.0.1:5434/db?target_session_attrs=primary'],
    ['postgresql://svc:p%40ss@pg1.internal,pg2.internal:5433,pg3.internal/bulk_import?target_session_attrs=read-write&sslmode=require'],
    ['postgres://u@[::1]:5432,[2001:db8::7]:5433/app'],
    ['postgres://u@[fe80::1]/app'],
    ['postgres://u@db/app?prepare=false'],
    ['postgres://db'],
  ])('accepts %s as it is', (url) => {
    const config = loadConfig({ DATABASE_URL: url, DATABASE_LISTEN_URL: url });
    expect(config.databaseUrl).toBe(url);
    expect(config.databaseListenUrl).toBe(url);
  });

  // note: every URL holds the password hunter2, which no message may repeat.
  it.each([
    ['garbage hunter2', 'DATABASE_URL: must be a postgres:// or postgresql:// URL'],
    ['mysql://u:hunter2@db/app', 'DATABASE_URL: must be a postgres:// or postgresql:// URL'],
    ['postgres://u:hunter2@/app', 'DATABASE_URL: name at least one host'],
    ['postgres://u:hunter2@h1,,h2/app', 'DATABASE_URL: host 2 of 3 is not host[:port]'],
    ['postgres://u:hunter2@h1:5432,h2:99999/app', 'DATABASE_URL: host 2 of 2 has a port outside 1-65535'],
    ['postgres://u:hunter2@h1:0/app', 'DATABASE_URL: the host has a port outside 1-65535'],
    ['postgres://u:hunter2@[::zz]:5432/app', 'DATABASE_URL: the host is not host[:port] or [IPv6 address][:port]'],
    ['postgres://u:hunter2@::1:5432/app', 'DATABASE_URL: the host is not host[:port]'],
    ['postgres://u:hunt/er2@h1,h2/app', 'DATABASE_URL: the host is not host[:port]'],
    ['postgres://u:hunter2@h1/%zz', 'DATABASE_URL: the database name is not validly percent-encoded'],
    ['postgres://u:hunter2@h1,h2/app?target_session_attrs=master', 'DATABASE_URL: target_session_attrs must be one of read-write, read-only, primary, standby, prefer-standby'],
  ])('refuses DATABASE_URL=%s at start, naming the variable and not the password', (url, message) => {
    expect(() => loadConfig({ DATABASE_URL: url })).toThrow(ConfigError);
    expect(() => loadConfig({ DATABASE_URL: url })).toThrow(message);
    expect(() => loadConfig({ DATABASE_URL: url })).not.toThrow(/hunt/);
  });

  it('refuses a DATABASE_LISTEN_URL that is not one, naming it', () => {
    const env = { DATABASE_URL: 'postgres://u@h1,h2/app', DATABASE_LISTEN_URL: 'postgres://u:hunter2@h1;h2/app' };
    expect(() => loadConfig(env)).toThrow('DATABASE_LISTEN_URL: the host is not host[:port]');
    expect(() => loadConfig(env)).not.toThrow(/hunt/);
  });
});

describe('loadConfig: IMPORT_RETENTION_DAYS', () => {
  it('defaults to 30 days', () => {
    expect(loadConfig({}).importRetentionDays).toBe(30);
  });

  it.each([
    ['1', 1],
    ['90', 90],
    ['36500', 36_500],
  ])('reads %s as %i days', (raw, days) => {
    expect(loadConfig({ IMPORT_RETENTION_DAYS: raw }).importRetentionDays).toBe(days);
  });

  it.each([['0'], ['-3'], ['1.5'], ['thirty'], [''], ['36501']])('refuses IMPORT_RETENTION_DAYS=%j at start, naming the variable', (raw) => {
    expect(() => loadConfig({ IMPORT_RETENTION_DAYS: raw })).toThrow(ConfigError);
    expect(() => loadConfig({ IMPORT_RETENTION_DAYS: raw })).toThrow(/IMPORT_RETENTION_DAYS: /);
  });
});

describe.each([
  ['FILE_UPLOAD_TIMEOUT_MS', 'fileUploadTimeoutMs', 600_000],
  ['EXPORT_IDLE_TIMEOUT_MS', 'exportIdleTimeoutMs', 30_000],
] as const)('loadConfig: %s', (name, setting, fallback) => {
  it(`defaults to ${fallback} ms, and reads a value from a second to a day`, () => {
    expect(loadConfig({})[setting]).toBe(fallback);
    expect(loadConfig({ [name]: '1000' })[setting]).toBe(1_000);
    expect(loadConfig({ [name]: '86400000' })[setting]).toBe(86_400_000);
  });

  it.each([['0'], ['999'], ['86400001'], ['1.5'], ['ten'], ['']])(`refuses ${name}=%j at start, naming the variable`, (raw) => {
    expect(() => loadConfig({ [name]: raw })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: raw })).toThrow(new RegExp(`${name}: `));
  });
});

describe('loadConfig: FILE_IMPORT_WRITERS', () => {
  it('defaults to 2, and reads 1 to 16', () => {
    expect(loadConfig({}).fileImportWriters).toBe(2);
    expect(loadConfig({ FILE_IMPORT_WRITERS: '1' }).fileImportWriters).toBe(1);
    expect(loadConfig({ FILE_IMPORT_WRITERS: '16' }).fileImportWriters).toBe(16);
  });

  it.each([['0'], ['17'], ['1.5'], ['two'], ['']])('refuses FILE_IMPORT_WRITERS=%j at start, naming the variable', (raw) => {
    expect(() => loadConfig({ FILE_IMPORT_WRITERS: raw })).toThrow(ConfigError);
    expect(() => loadConfig({ FILE_IMPORT_WRITERS: raw })).toThrow(/FILE_IMPORT_WRITERS: /);
  });
});

describe('loadConfig: FILE_IMPORT_HELPERS', () => {
  it('defaults to 3 (unset or empty, as compose files pass it), and reads 0 to 16', () => {
    expect(loadConfig({}).fileImportHelpers).toBe(3);
    expect(loadConfig({ FILE_IMPORT_HELPERS: '' }).fileImportHelpers).toBe(3);
    expect(loadConfig({ FILE_IMPORT_HELPERS: '0' }).fileImportHelpers).toBe(0);
    expect(loadConfig({ FILE_IMPORT_HELPERS: '16' }).fileImportHelpers).toBe(16);
  });

  it.each([['-1'], ['17'], ['1.5'], ['two']])('refuses FILE_IMPORT_HELPERS=%j at start, naming the variable', (raw) => {
    expect(() => loadConfig({ FILE_IMPORT_HELPERS: raw })).toThrow(/FILE_IMPORT_HELPERS: /);
  });
});

describe.each([
  ['FILE_UPLOADS_PER_PROCESS', 'fileUploadsPerProcess', 16, 1_000],
  ['FILE_UPLOAD_POOL_MAX', 'fileUploadPoolMax', 2, 100],
] as const)('loadConfig: %s', (name, setting, fallback, max) => {
  it(`defaults to ${fallback}, and reads 1 to ${max}`, () => {
    expect(loadConfig({})[setting]).toBe(fallback);
    expect(loadConfig({ [name]: '1' })[setting]).toBe(1);
    expect(loadConfig({ [name]: String(max) })[setting]).toBe(max);
  });

  it.each([['0'], [String(max + 1)], ['1.5'], ['four'], ['']])(`refuses ${name}=%j at start, naming the variable`, (raw) => {
    expect(() => loadConfig({ [name]: raw })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: raw })).toThrow(new RegExp(`${name}: `));
  });
});

