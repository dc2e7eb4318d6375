import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { startWorker, type RunningWorker } from '../../src/worker/worker.js';
import { bearer, validListing } from '../support/fixtures.js';
import { freePort } from '../support/processes.js';
import { parseSamples } from '../support/prometheus.js';
import { ACCEPTED_FINDINGS, promtoolCheckMetrics } from '../support/promtool-check-metrics.js';
import { startTestService, type TestService } from '../support/test-service.js';

const packageVersion = (JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const ADMIN_USER = 'lint-ops';
const ADMIN_PASSWORD = 'lint-password-0123';
const ADMIN = { authorization: `Basic ${Buffer.from(`${ADMIN_USER}:${ADMIN_PASSWORD}`).toString('base64')}` };

describe('GET /metrics on the API and on a worker', () => {
  let service: TestService;
  let worker: RunningWorker;
  const scrapes: Record<'api' | 'worker', string> = { api: '', worker: '' };

  beforeAll(async () => {
    service = await startTestService({ worker: false, env: { ADMIN_USER, ADMIN_PASSWORD } });
    const port = await freePort();
    worker = await startWorker({ ...service.config, host: '127.0.0.1', metricsPort: port }, service.deps.log.child({ part: 'worker' }));
    // One import and one refusal, so that the labelled families have samples to lint.
    const key = await service.createKey(await service.createAccount(), ['listings:write']);
    const res = await service.request({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(key), payload: { listings: [validListing(), validListing({ price_cents: -1 })] } });
    expect(res.statusCode).toBe(201);
    expect((await service.request({ method: 'GET', url: '/v1/api/me' })).statusCode).toBe(401);
    const api = await service.request({ method: 'GET', url: '/metrics', headers: ADMIN });
    expect(api.statusCode).toBe(200);
    scrapes.api = api.body;
    scrapes.worker = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text());
  });
  afterAll(async () => {
    await worker?.close();
    await service?.close();
  });

  it.each(['api', 'worker'] as const)('of the %s passes promtool check metrics but for the three accepted findings', async (part) => {
    const { exitCode, findings } = await promtoolCheckMetrics(scrapes[part]);
    expect(findings.sort()).toEqual(ACCEPTED_FINDINGS);
    // note: promtool exits 3 when it has lint findings, 1 when it cannot parse the exposition.
    expect(exitCode).toBe(3);
  });

  it.each(['api', 'worker'] as const)('of the %s says which build answers: bulk_import_build_info with the version of GET /v1/health and package.json', async (part) => {
    const { version } = (await service.request({ method: 'GET', url: '/v1/health' })).json<{ version: string }>();
    expect(version).toBe(packageVersion);
    const info = parseSamples(scrapes[part]).filter((s) => s.name === 'bulk_import_build_info');
    expect(info).toEqual([{ name: 'bulk_import_build_info', labels: { version, node: process.versions.node }, value: 1 }]);
  });
});
