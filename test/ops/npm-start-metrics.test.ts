import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { generateApiKey } from '../../src/shared/access/api-key.js';
import { createAccount } from '../../src/shared/repositories/accounts.js';
import { createKeyWithinCap } from '../../src/shared/repositories/api-keys.js';
import { bearer, validListing } from '../support/fixtures.js';
import { freePort, spawnScript, type ServiceProcess } from '../support/processes.js';
import { sampleValue } from '../support/prometheus.js';
import { ACCEPTED_FINDINGS, promtoolCheckMetrics } from '../support/promtool-check-metrics.js';
import { familiesOf, rulesMissing } from '../support/rule-metrics.js';
import { createTestDatabase, testRedisPrefix, type TestDatabase } from '../support/test-database.js';
import { testRedisEnv } from '../support/test-redis.js';
import { TEST_SESSION_SECRET } from '../support/test-service.js';

const ADMIN_USER = 'start-ops';
const ADMIN_PASSWORD = 'start-password-0123';
const ADMIN = { authorization: `Basic ${Buffer.from(`${ADMIN_USER}:${ADMIN_PASSWORD}`).toString('base64')}` };

/**
 * `npm start` (src/start.ts: migrations, the API and one worker in one process), run as a process
 * of its own on a fresh database and Redis prefix, without METRICS_PORT: its one `GET /metrics`
 * serves the worker's metrics beside the API's.
 */
describe('npm start: GET /metrics', () => {
  let database: TestDatabase;
  let start: ServiceProcess;
  let baseUrl: string;
  let text: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    start = spawnScript('npm-start', 'src/start.ts', {
      DATABASE_URL: database.url,
      ...testRedisEnv(),
      REDIS_PREFIX: testRedisPrefix(),
      SESSION_SECRET: TEST_SESSION_SECRET,
      ADMIN_USER,
      ADMIN_PASSWORD,
      PORT: String(port),
      HOST: '127.0.0.1',
      WORKER_CONCURRENCY: '3',
      // note: empty is unset, whatever the shell running the tests exports.
      METRICS_PORT: '',
    });
    // note: the migrations, then the worker, then the API: it answers last (no time limit of its own: the hook timeout bounds it).
    while ((await fetch(`${baseUrl}/v1/health`).then((r) => r.status, () => 0)) !== 200) {
      if (start.child.exitCode !== null) throw new Error(`npm start exited:\n${start.output.slice(-20).join('\n')}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    // One import, so the worker's labelled families have samples.
    const sql = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      const account = await createAccount(sql, { displayName: 'Start Prints', tier: 'enterprise', isOwner: true, hasCompletedOnboarding: true, avatarUrl: null });
      const key = generateApiKey();
      await createKeyWithinCap(sql, { accountId: account.id, label: 'start', scopes: ['listings:write'], keyPrefix: key.prefix, keyHash: key.hash });
      const res = await fetch(`${baseUrl}/v1/api/listings/bulk`, {
        method: 'POST',
        headers: { ...bearer(key.fullKey), 'content-type': 'application/json' },
        body: JSON.stringify({ listings: [validListing(), validListing()] }),
      });
      expect(res.status).toBe(201);
    } finally {
      await sql.end({ timeout: 5 });
    }
    const res = await fetch(`${baseUrl}/metrics`, { headers: ADMIN });
    expect(res.status).toBe(200);
    text = await res.text();
  });
  afterAll(async () => {
    await start?.stop('SIGKILL');
    await database?.drop();
  });

  it('serves every metric and label the shipped alert rules read', async () => {
    expect(await rulesMissing(familiesOf(text))).toEqual([]);
  });

  it('serves the in-process worker\'s metrics: its slots, the import it ran and the rows it wrote', () => {
    expect(sampleValue(text, 'bulk_import_worker_slots')).toBe(3);
    expect(sampleValue(text, 'bulk_import_worker_busy_slots')).toBe(0);
    expect(sampleValue(text, 'bulk_import_job_duration_seconds_count', { kind: 'listings', outcome: 'completed' })).toBe(1);
    expect(sampleValue(text, 'bulk_import_worker_rows_written_total', { kind: 'listings', source: 'request' })).toBe(2);
    expect(sampleValue(text, 'bulk_import_rows_total', { kind: 'listings', outcome: 'inserted' })).toBe(2);
  });

  it('serves each metric once: the process metrics and the build info the API and the worker share are not repeated', async () => {
    const types = [...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!);
    expect(types.filter((name, i) => types.indexOf(name) !== i)).toEqual([]);
    const { findings } = await promtoolCheckMetrics(text);
    expect(findings.sort()).toEqual(ACCEPTED_FINDINGS);
  });

  it('stops on SIGTERM with exit code 0', async () => {
    expect(await start.stop('SIGTERM')).toBe(0);
  });
});
