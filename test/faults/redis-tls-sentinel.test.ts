import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFaultScenario, type FaultScenario } from '../support/fault-scenario.js';
import { spawnPart } from '../support/processes.js';
import { opensslAvailable, redisServerAvailable, startRedisTlsSentinels, type RedisTlsSentinels } from '../support/redis-servers.js';

/** How long a worker that cannot reach Redis is watched, after its first error, for a start. */
const NO_START_WATCH_MS = 3_000;

/**
 * The API and a worker as an operator runs them, on Redis Sentinel with REDIS_TLS=true: a master
 * that speaks TLS only, named by a sentinel that speaks TLS only, certificates from a throwaway CA
 * given through NODE_EXTRA_CA_CERTS. An import that ends 201 went through both over TLS.
 */
describe.skipIf(!redisServerAvailable() || !opensslAvailable())('REDIS_SENTINELS with REDIS_TLS=true: the API and the worker speak TLS', () => {
  let servers: RedisTlsSentinels | undefined;
  let scenario: FaultScenario | undefined;

  beforeAll(async () => {
    servers = await startRedisTlsSentinels();
    scenario = await createFaultScenario({
      REDIS_SENTINELS: `127.0.0.1:${servers.sentinel.port}`,
      REDIS_SENTINEL_NAME: servers.name,
      REDIS_TLS: 'true',
      NODE_EXTRA_CA_CERTS: servers.certificates.caFile,
    });
  });
  afterAll(async () => {
    await scenario?.close();
    await servers?.stop();
  });

  it('imports rows: 201, the rows written, the queue on the TLS-only master', async () => {
    const api = await scenario!.startApi();
    await scenario!.startWorker();

    const res = await scenario!.postListings(api.baseUrl, 3);

    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect((await scenario!.countRows()).listings).toBe(3);
    const master = servers!.master.client();
    try {
      expect(await master.keys(`${scenario!.env.REDIS_PREFIX}:*`)).not.toEqual([]);
    } finally {
      master.disconnect();
    }
  });

  it('a worker without REDIS_TLS never starts: the master refuses plain text, and its log says so', async () => {
    // note: TLS to the sentinel still, so that only the connection to the master lacks it.
    const worker = spawnPart('worker', { ...scenario!.env, REDIS_TLS: '', REDIS_SENTINEL_TLS: 'true' });
    try {
      await worker.waitForOutput(/"msg":"worker error"/);
      await new Promise((resolve) => setTimeout(resolve, NO_START_WATCH_MS));
      expect(worker.output.filter((line) => line.includes('worker started'))).toEqual([]);
      expect(worker.output.join('\n')).toMatch(/ECONNRESET|Connection is closed/);
    } finally {
      await worker.stop('SIGKILL');
    }
  });
});
