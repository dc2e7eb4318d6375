import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/shared/infra/config.js';

const SENTINELS = { REDIS_SENTINELS: 's1:26379', REDIS_SENTINEL_NAME: 'mymaster' };

describe('loadConfig: REDIS_TLS and REDIS_SENTINEL_TLS', () => {
  it.each([
    [{}, { tls: false, sentinelTls: false }],
    [{ REDIS_TLS: 'true' }, { tls: true, sentinelTls: true }],
    [{ REDIS_TLS: 'true', REDIS_SENTINEL_TLS: 'false' }, { tls: true, sentinelTls: false }],
    [{ REDIS_SENTINEL_TLS: 'true' }, { tls: false, sentinelTls: true }],
    [{ REDIS_TLS: 'false', REDIS_SENTINEL_TLS: '' }, { tls: false, sentinelTls: false }],
  ])('sentinels with %j: %j', (env, expected) => {
    expect(loadConfig({ ...SENTINELS, ...env }).redis).toMatchObject({ mode: 'sentinel', ...expected });
  });

  it.each([
    [{}, false],
    [{ REDIS_TLS: 'true' }, true],
  ])('one server (REDIS_URL) with %j: tls %s', (env, tls) => {
    expect(loadConfig({ REDIS_URL: 'redis://r:6379', ...env }).redis).toEqual({ mode: 'single', url: 'redis://r:6379', tls });
  });

  it('refuses a REDIS_SENTINEL_TLS other than true or false, naming it', () => {
    expect(() => loadConfig({ ...SENTINELS, REDIS_SENTINEL_TLS: 'yes' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...SENTINELS, REDIS_SENTINEL_TLS: 'yes' })).toThrow(/REDIS_SENTINEL_TLS/);
  });
});
