import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IMPORT_JOB_OPTIONS } from '../../src/shared/import/import-queue.js';
import { bearer, validListing, validMachine } from '../support/fixtures.js';
import { hasMetric, parseSamples, sampleValue } from '../support/prometheus.js';
import { startTestService, type TestService } from '../support/test-service.js';

const ADMIN_USER = 'metrics-ops';
const ADMIN_PASSWORD = 'metrics-password-0123';
const ADMIN = { authorization: `Basic ${Buffer.from(`${ADMIN_USER}:${ADMIN_PASSWORD}`).toString('base64')}` };

function unknownKey(): string {
  return `svc_live_${randomBytes(4).toString('hex')}_${randomBytes(16).toString('hex')}`;
}

async function scrape(service: TestService): Promise<string> {
  const res = await service.request({ method: 'GET', url: '/metrics', headers: ADMIN });
  expect(res.statusCode).toBe(200);
  return res.body;
}

/** Polls the job until it reaches `state` (no time limit of its own: the test timeout bounds it). */
async function waitForState(service: TestService, jobId: string, state: string): Promise<void> {
  while ((await service.deps.queue.getJobState(jobId)) !== state) await new Promise((resolve) => setTimeout(resolve, 50));
}

describe('GET /metrics on the API', () => {
  let service: TestService;
  let key: string;

  beforeAll(async () => {
    service = await startTestService({ env: { ADMIN_USER, ADMIN_PASSWORD } });
    key = await service.createKey(await service.createAccount(), ['listings:write']);
  });
  afterAll(async () => {
    await service?.close();
  });

  it.each([
    { name: 'no credentials', headers: (): Record<string, string> => ({}) },
    { name: 'an API key as Bearer', headers: () => bearer(key) },
    { name: 'a wrong password', headers: () => ({ authorization: `Basic ${Buffer.from(`${ADMIN_USER}:nope-nope-nope`).toString('base64')}` }) },
  ])('answers 401 with $name', async ({ headers }) => {
    const res = await service.request({ method: 'GET', url: '/metrics', headers: headers() });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: 'Authentication required', code: 'admin_auth_required' });
  });

  it('serves the Prometheus text format with the default process metrics', async () => {
    const res = await service.request({ method: 'GET', url: '/metrics', headers: ADMIN });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) {
      expect(hasMetric(res.body, name), name).toBe(true);
    }
    expect(() => parseSamples(res.body)).not.toThrow();
  });

  describe('after a /me, two imports, a replay, a 404, an IP lockout and a spent minute quota', () => {
    let before: string;
    let after: string;
    let meOk = 0;
    let rateLimited = 0;
    const lockedIp = '203.0.113.77';

    beforeAll(async () => {
      before = await scrape(service);

      expect((await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key) })).statusCode).toBe(200);
      meOk += 1;

      const listings = await service.request({
        method: 'POST',
        url: '/v1/api/listings/bulk',
        headers: bearer(key),
        payload: { listings: [validListing(), validListing(), validListing({ currency: 'EUR' })] },
      });
      expect(listings.json()).toMatchObject({ inserted: 2, skipped: 1 });

      const idempotent = { ...bearer(key), 'idempotency-key': randomUUID() };
      const payload = { machines: [validMachine()] };
      const first = await service.request({ method: 'POST', url: '/v1/api/machines/bulk', headers: idempotent, payload });
      const replay = await service.request({ method: 'POST', url: '/v1/api/machines/bulk', headers: idempotent, payload });
      expect(first.json()).toMatchObject({ inserted: 1, skipped: 0 });
      expect(replay.headers['idempotent-replayed']).toBe('true');

      expect((await service.request({ method: 'GET', url: `/v1/nowhere/${randomUUID()}` })).statusCode).toBe(404);

      for (let i = 0; i < 20; i += 1) {
        const res = await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(unknownKey()), remoteAddress: lockedIp });
        expect(res.statusCode).toBe(401);
      }
      // One refused by the API-key hook, one by the lockout guard in front of key management.
      expect((await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key), remoteAddress: lockedIp })).statusCode).toBe(429);
      expect((await service.request({ method: 'GET', url: '/v1/api/keys', remoteAddress: lockedIp })).statusCode).toBe(429);

      // An Enterprise key allows 300 requests a minute; this one has used 4.
      const quotaKey = await service.createKey(await service.createAccount(), ['listings:write']);
      for (let sent = 0; sent < 310; sent += 50) {
        const batch = await Promise.all(Array.from({ length: 50 }, () => service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(quotaKey) })));
        meOk += batch.filter((r) => r.statusCode === 200).length;
        rateLimited += batch.filter((r) => r.statusCode === 429).length;
      }
      expect(rateLimited).toBeGreaterThan(0);

      after = await scrape(service);
    });

    const delta = (name: string, labels: Record<string, string> = {}) => sampleValue(after, name, labels) - sampleValue(before, name, labels);

    it('counts each request in http_request_duration_seconds under its route pattern and status', () => {
      expect(delta('http_request_duration_seconds_count', { method: 'GET', route: '/v1/api/me', status: '200' })).toBe(meOk);
      expect(delta('http_request_duration_seconds_count', { method: 'POST', route: '/v1/api/listings/bulk', status: '201' })).toBe(1);
      expect(delta('http_request_duration_seconds_count', { method: 'POST', route: '/v1/api/machines/bulk', status: '201' })).toBe(2);
      expect(delta('http_request_duration_seconds_count', { method: 'GET', route: '/v1/api/me', status: '401' })).toBe(20);
      expect(delta('http_request_duration_seconds_count', { method: 'GET', route: '/v1/api/me', status: '429' })).toBe(1 + rateLimited);
      expect(delta('http_request_duration_seconds_sum', { method: 'POST', route: '/v1/api/listings/bulk', status: '201' })).toBeGreaterThan(0);
    });

    it('labels a request no route matched "unmatched", never with its raw URL', () => {
      expect(delta('http_request_duration_seconds_count', { method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
      expect(after).not.toContain('/v1/nowhere');
    });

    it('counts the rows of 201 replies by kind and outcome, and not the replay', () => {
      expect(delta('bulk_import_rows_total', { kind: 'listings', outcome: 'inserted' })).toBe(2);
      expect(delta('bulk_import_rows_total', { kind: 'listings', outcome: 'skipped' })).toBe(1);
      expect(delta('bulk_import_rows_total', { kind: 'machines', outcome: 'inserted' })).toBe(1);
      expect(delta('bulk_import_rows_total', { kind: 'machines', outcome: 'skipped' })).toBe(0);
    });

    it('counts the requests refused by the IP lockout', () => {
      expect(delta('bulk_import_auth_lockouts_total')).toBe(2);
    });

    it('counts the requests refused by the minute quota', () => {
      expect(delta('bulk_import_rate_limited_total', { window: 'per-minute' })).toBe(rateLimited);
      expect(delta('bulk_import_rate_limited_total', { window: 'per-day' })).toBe(0);
    });
  });

  it('reports delayed and failed import jobs in bulk_import_queue_jobs', async () => {
    const before = await scrape(service);
    await service.deps.queue.add('listings', { kind: 'listings', accountId: randomUUID(), requestId: 'delayed', total: 1, errors: [], rowCount: 1 }, {
      ...IMPORT_JOB_OPTIONS,
      delay: 10 * 60_000,
    });
    // A payload the worker refuses for good (UnrecoverableError): failed on its first attempt.
    const malformed = await service.deps.queue.add('listings', { kind: 'listings', accountId: 'not-a-uuid', requestId: 'bad', total: 0, errors: [], rowCount: 0 });
    await waitForState(service, malformed.id!, 'failed');
    const after = await scrape(service);
    expect(sampleValue(after, 'bulk_import_queue_jobs', { state: 'delayed' }) - sampleValue(before, 'bulk_import_queue_jobs', { state: 'delayed' })).toBe(1);
    expect(sampleValue(after, 'bulk_import_queue_jobs', { state: 'failed' }) - sampleValue(before, 'bulk_import_queue_jobs', { state: 'failed' })).toBe(1);
  });
});

describe('bulk_import_queue_jobs with no worker running', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ worker: false, env: { ADMIN_USER, ADMIN_PASSWORD } });
  });
  afterAll(async () => {
    await service?.close();
  });

  it('reports every state, and a job nobody took as waiting', async () => {
    const before = await scrape(service);
    for (const state of ['waiting', 'active', 'failed', 'delayed']) expect(sampleValue(before, 'bulk_import_queue_jobs', { state }), state).toBe(0);
    expect(parseSamples(before).filter((s) => s.name === 'bulk_import_queue_jobs').map((s) => s.labels.state).sort()).toEqual(['active', 'delayed', 'failed', 'waiting']);
    await service.deps.queue.add('listings', { kind: 'listings', accountId: randomUUID(), requestId: 'waiting', total: 1, errors: [], rowCount: 1 });
    expect(sampleValue(await scrape(service), 'bulk_import_queue_jobs', { state: 'waiting' })).toBe(1);
  });
});
