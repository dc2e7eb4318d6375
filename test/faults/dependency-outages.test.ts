import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { createFaultScenario, type FaultScenario } from '../support/fault-scenario.js';
import { freePort } from '../support/processes.js';

const hasRedisServer = spawnSync('redis-server', ['--version']).status === 0;

async function startRedisServer(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  for (let i = 0; i < 100 && !out.includes('Ready to accept connections'); i += 1) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (!out.includes('Ready to accept connections')) throw new Error(`redis-server did not start: ${out}`);
  return child;
}

async function stopRedisServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill('SIGKILL');
  await once(child, 'exit');
}

/** Polls until `probe` is true, within `timeoutMs`. */
async function eventually(probe: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe()) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`condition not reached within ${timeoutMs} ms`);
}

async function getJson(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('dependencies failing', () => {
  let scenario: FaultScenario | undefined;
  let redis: ChildProcess | undefined;

  afterEach(async () => {
    await scenario?.close();
    scenario = undefined;
    if (redis) await stopRedisServer(redis);
    redis = undefined;
  });

  it.skipIf(!hasRedisServer)('Redis stopped: clean 503s within 2 s and a degraded health; back by itself when Redis returns', async () => {
    const port = await freePort();
    redis = await startRedisServer(port);
    scenario = await createFaultScenario({ REDIS_URL: `redis://127.0.0.1:${port}` });
    const api = await scenario.startApi();
    await scenario.startWorker();
    const auth = { authorization: `Bearer ${scenario.apiKey}` };
    expect((await scenario.postListings(api.baseUrl, 2)).status).toBe(201);

    await stopRedisServer(redis);
    const started = Date.now();
    const me = await getJson(`${api.baseUrl}/v1/api/me`, auth);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(me).toEqual({ status: 503, body: { error: 'Service temporarily unavailable', code: 'service_unavailable', retry_after_sec: 5 } });
    const importDuringOutage = await scenario.postListings(api.baseUrl, 2);
    expect(importDuringOutage.status).toBe(503);
    expect(importDuringOutage.body.error).toBe('Service temporarily unavailable');
    const health = await getJson(`${api.baseUrl}/v1/health`);
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({ status: 'degraded', checks: { postgres: 'ok', redis: 'down' } });

    redis = await startRedisServer(port);
    await eventually(async () => (await getJson(`${api.baseUrl}/v1/health`)).status === 200);
    await eventually(async () => (await getJson(`${api.baseUrl}/v1/api/me`, auth)).status === 200);
    const afterRecovery = await scenario.postListings(api.baseUrl, 3);
    expect(afterRecovery).toMatchObject({ status: 201, body: { inserted: 3 } });
    expect(await scenario.countRows()).toEqual({ listings: 5, imports: 2 });
  });

  it('PostgreSQL connections killed: API and worker reconnect and go on', async () => {
    scenario = await createFaultScenario();
    const api = await scenario.startApi();
    await scenario.startWorker();
    const auth = { authorization: `Bearer ${scenario.apiKey}` };
    expect((await scenario.postListings(api.baseUrl, 2)).status).toBe(201);

    const killed = await scenario.sql<{ count: number }[]>`
      select count(pg_terminate_backend(pid))::int as count from pg_stat_activity
      where datname = ${scenario.database.name} and pid <> pg_backend_pid()`;
    expect(killed[0]!.count).toBeGreaterThan(0);

    // Each reply is either a success or a clean, retryable 503, never a 500 or a hang.
    const replies = [];
    for (let i = 0; i < 5; i += 1) replies.push(await getJson(`${api.baseUrl}/v1/api/me`, auth));
    for (const reply of replies) expect([200, 503]).toContain(reply.status);
    expect(replies.at(-1)!.status).toBe(200);
    const afterKill = await scenario.postListings(api.baseUrl, 3);
    expect(afterKill).toMatchObject({ status: 201, body: { inserted: 3 } });
    expect(await scenario.countRows()).toEqual({ listings: 5, imports: 2 });
  });

  it('PostgreSQL unreachable: a clean 503 and a degraded health', async () => {
    const port = await freePort();
    // A port where nothing listens stands in for a database that is down.
    scenario = await createFaultScenario();
    const api = await scenario.startApi({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/nowhere` });
    const started = Date.now();
    const me = await getJson(`${api.baseUrl}/v1/api/me`, { authorization: `Bearer ${scenario.apiKey}` });
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(me).toEqual({ status: 503, body: { error: 'Service temporarily unavailable', code: 'service_unavailable', retry_after_sec: 5 } });
    const health = await getJson(`${api.baseUrl}/v1/health`);
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({ status: 'degraded', checks: { postgres: 'down', redis: 'ok' } });
  });
});
