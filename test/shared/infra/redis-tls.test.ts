import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnScript } from '../../support/processes.js';
import { opensslAvailable, redisServerAvailable, startRedisTlsSentinels, type RedisTlsSentinels } from '../../support/redis-servers.js';

interface ProbeResult {
  label: string;
  reply?: string;
  error?: string;
}

const PROBE_TIMEOUT_MS = 30_000;

/**
 * Runs test/support/redis-probe.ts in a Node process of its own, as the service would run: its
 * config from the case's variables, its CA from NODE_EXTRA_CA_CERTS (read by Node at start).
 */
async function probe(cases: { label: string; env: Record<string, string> }[], processEnv: Record<string, string>): Promise<Map<string, ProbeResult>> {
  const run = spawnScript('redis-probe', 'test/support/redis-probe.ts', { ...processEnv, REDIS_PROBE_CASES: JSON.stringify(cases) });
  try {
    const line = await run.waitForOutput(/^\[\{"label"/, PROBE_TIMEOUT_MS);
    return new Map((JSON.parse(line) as ProbeResult[]).map((result) => [result.label, result]));
  } finally {
    await run.stop('SIGKILL');
  }
}

/**
 * REDIS_TLS against a master that speaks TLS only and sentinels that speak TLS only or plain text
 * only: a client that gets PONG spoke TLS to the master, and to the sentinel when its port is the
 * TLS one. The certificates come from a throwaway CA, given to the client through
 * NODE_EXTRA_CA_CERTS as an operator would.
 */
describe.skipIf(!redisServerAvailable() || !opensslAvailable())('REDIS_TLS with REDIS_SENTINELS or REDIS_URL (createRedis, in a process of its own)', () => {
  let servers: RedisTlsSentinels;
  let results: Map<string, ProbeResult>;
  let withoutCa: Map<string, ProbeResult>;

  const CASES: { label: string; env: (s: RedisTlsSentinels) => Record<string, string>; connects: boolean }[] = [
    {
      label: 'REDIS_TLS=true: TLS to the sentinel and to the master it names',
      env: (s) => ({ REDIS_SENTINELS: `127.0.0.1:${s.sentinel.port}`, REDIS_SENTINEL_NAME: s.name, REDIS_TLS: 'true' }),
      connects: true,
    },
    {
      label: 'REDIS_TLS=true, REDIS_SENTINEL_TLS=false: plain text to the sentinel, TLS to the master',
      env: (s) => ({ REDIS_SENTINELS: `127.0.0.1:${s.plainSentinel.port}`, REDIS_SENTINEL_NAME: s.name, REDIS_TLS: 'true', REDIS_SENTINEL_TLS: 'false' }),
      connects: true,
    },
    {
      label: 'REDIS_TLS=true with a redis:// REDIS_URL',
      env: (s) => ({ REDIS_URL: `redis://127.0.0.1:${s.master.port}`, REDIS_TLS: 'true' }),
      connects: true,
    },
    {
      label: 'REDIS_TLS unset, REDIS_SENTINEL_TLS=true: the sentinel answers, the master refuses plain text',
      env: (s) => ({ REDIS_SENTINELS: `127.0.0.1:${s.sentinel.port}`, REDIS_SENTINEL_NAME: s.name, REDIS_SENTINEL_TLS: 'true' }),
      connects: false,
    },
    {
      label: 'REDIS_TLS unset: the TLS sentinel refuses plain text',
      env: (s) => ({ REDIS_SENTINELS: `127.0.0.1:${s.sentinel.port}`, REDIS_SENTINEL_NAME: s.name }),
      connects: false,
    },
    {
      label: 'REDIS_TLS=true covers the sentinels too: a plain-text sentinel is not reached without REDIS_SENTINEL_TLS=false',
      env: (s) => ({ REDIS_SENTINELS: `127.0.0.1:${s.plainSentinel.port}`, REDIS_SENTINEL_NAME: s.name, REDIS_TLS: 'true' }),
      connects: false,
    },
    {
      label: 'REDIS_TLS unset with a redis:// REDIS_URL',
      env: (s) => ({ REDIS_URL: `redis://127.0.0.1:${s.master.port}` }),
      connects: false,
    },
  ];

  beforeAll(async () => {
    servers = await startRedisTlsSentinels();
    const cases = CASES.map(({ label, env }) => ({ label, env: env(servers) }));
    [results, withoutCa] = await Promise.all([
      probe(cases, { NODE_EXTRA_CA_CERTS: servers.certificates.caFile }),
      // note: the clients that connect over TLS only, to the sentinel and the master or to the master alone
      probe(cases.filter(({ env }, i) => CASES[i]!.connects && env.REDIS_SENTINEL_TLS !== 'false'), {}),
    ]);
  });
  afterAll(async () => {
    await servers?.stop();
  });

  it.each(CASES.map(({ label, connects }) => [label, connects] as const))('%s (connects: %s)', (label, connects) => {
    const result = results.get(label);
    if (connects) {
      expect(result, result?.error).toEqual({ label, reply: 'PONG' });
    } else {
      expect(result?.reply).toBeUndefined();
      expect(result?.error).toMatch(/not ready within/);
    }
  });

  it('checks the certificates: without the CA in NODE_EXTRA_CA_CERTS the clients that connected above are refused', () => {
    const [sentinel, url] = [CASES[0]!.label, CASES[2]!.label];
    expect([...withoutCa.keys()]).toEqual([sentinel, url]);
    // note: ioredis reports a sentinel it could not use as "Connection is closed", whatever the cause.
    expect(withoutCa.get(sentinel)).toMatchObject({ error: expect.stringMatching(/not ready within/) });
    expect(withoutCa.get(url)).toMatchObject({ error: expect.stringMatching(/not ready within .*certificate/) });
  });
});
