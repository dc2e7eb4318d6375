import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiErrors } from '../../src/shared/errors/api-errors.js';
import { startWorker, type RunningWorker } from '../../src/worker/worker.js';
import { bearer, validListing } from '../support/fixtures.js';
import { holdAccount, holdImports, waitForHeldImports, waitForLockWaiters } from '../support/hold-imports.js';
import { freePort } from '../support/processes.js';
import { hasMetric, sampleValue } from '../support/prometheus.js';
import { startTestService, type TestService } from '../support/test-service.js';

describe('GET /metrics on a worker (METRICS_PORT set)', () => {
  let service: TestService;
  let worker: RunningWorker;
  let metricsUrl: string;
  let key: string;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
    const port = await freePort();
    worker = await startWorker({ ...service.config, host: '127.0.0.1', metricsPort: port }, service.deps.log.child({ part: 'worker' }));
    metricsUrl = `http://127.0.0.1:${port}/metrics`;
    key = await service.createKey(await service.createAccount(), ['listings:write']);
  });
  afterAll(async () => {
    await worker?.close();
    await service?.close();
  });

  async function scrape(): Promise<string> {
    const res = await fetch(metricsUrl);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return res.text();
  }

  it('listens on METRICS_PORT', () => {
    expect(worker.metricsPort).toBe(Number(new URL(metricsUrl).port));
  });

  it('serves the default process metrics without authentication', async () => {
    const text = await scrape();
    expect(hasMetric(text, 'process_cpu_user_seconds_total')).toBe(true);
    expect(hasMetric(text, 'nodejs_heap_size_used_bytes')).toBe(true);
  });

  it('answers 404 on any other path, with the API\'s body for it', async () => {
    const res = await fetch(metricsUrl.replace('/metrics', '/'));
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual(apiErrors.notFound().body);
  });

  it('times a completed import and counts the rows it wrote', async () => {
    const before = await scrape();
    const res = await service.request({
      method: 'POST',
      url: '/v1/api/listings/bulk',
      headers: bearer(key),
      payload: { listings: [validListing(), validListing(), validListing(), validListing({ price_cents: -1 })] },
    });
    expect(res.json()).toMatchObject({ inserted: 3, skipped: 1 });
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string>) => sampleValue(after, name, labels) - sampleValue(before, name, labels);
    expect(delta('bulk_import_job_duration_seconds_count', { kind: 'listings', outcome: 'completed' })).toBe(1);
    expect(delta('bulk_import_job_duration_seconds_sum', { kind: 'listings', outcome: 'completed' })).toBeGreaterThan(0);
    expect(delta('bulk_import_worker_rows_written_total', { kind: 'listings', source: 'request' })).toBe(3);
  });

  it('counts updated rows as written, and nothing for a dry run', async () => {
    const rows = [validListing({ external_id: 'M-1' }), validListing({ external_id: 'M-2' })];
    const post = (query: string, listings: object[]) => service.request({ method: 'POST', url: `/v1/api/listings/bulk${query}`, headers: bearer(key), payload: { listings } });
    expect((await post('', rows)).statusCode).toBe(201);
    const before = await scrape();
    const changed = [{ ...rows[0]!, price_cents: 1 }, rows[1]!, validListing({ external_id: 'M-3' })];
    expect((await post('?dry_run=true', changed)).json()).toMatchObject({ inserted: 1, updated: 1, unchanged: 1, dry_run: true });
    const afterDryRun = await scrape();
    expect(sampleValue(afterDryRun, 'bulk_import_worker_rows_written_total', { kind: 'listings', source: 'request' })).toBe(sampleValue(before, 'bulk_import_worker_rows_written_total', { kind: 'listings', source: 'request' }));
    expect((await post('', changed)).json()).toMatchObject({ inserted: 1, updated: 1, unchanged: 1 });
    const after = await scrape();
    expect(sampleValue(after, 'bulk_import_worker_rows_written_total', { kind: 'listings', source: 'request' }) - sampleValue(before, 'bulk_import_worker_rows_written_total', { kind: 'listings', source: 'request' })).toBe(2);
  });

  it('times a job that failed, under outcome "failed", and counts no rows for it', async () => {
    const before = await scrape();
    const job = await service.deps.queue.add('listings', { kind: 'listings', accountId: 'not-a-uuid', requestId: randomUUID(), total: 0, errors: [], rowCount: 0 });
    while ((await service.deps.queue.getJobState(job.id!)) !== 'failed') await new Promise((resolve) => setTimeout(resolve, 50));
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string>) => sampleValue(after, name, labels) - sampleValue(before, name, labels);
    expect(delta('bulk_import_job_duration_seconds_count', { kind: 'listings', outcome: 'failed' })).toBe(1);
    expect(delta('bulk_import_worker_rows_written_total', { kind: 'listings', source: 'request' })).toBe(0);
  });

  it('stops listening when the worker closes', async () => {
    const port = await freePort();
    const second = await startWorker({ ...service.config, host: '127.0.0.1', metricsPort: port }, service.deps.log.child({ part: 'worker-2' }));
    const url = `http://127.0.0.1:${port}/metrics`;
    expect((await fetch(url).then((r) => r.text())).length).toBeGreaterThan(0);
    await second.close();
    await expect(fetch(url)).rejects.toThrow();
  });
});

describe('bulk_import_worker_busy_slots and bulk_import_worker_slots', () => {
  const CONCURRENCY = 3;
  let service: TestService;
  let worker: RunningWorker;
  let metricsUrl: string;

  beforeAll(async () => {
    // note: the jobs beyond the worker's slots wait in the queue while the others are held; a long
    // pickup timeout keeps a slow machine from withdrawing them meanwhile.
    service = await startTestService({ worker: false, env: { WORKER_CONCURRENCY: String(CONCURRENCY), IMPORT_PICKUP_TIMEOUT_MS: '60000' } });
    const port = await freePort();
    worker = await startWorker({ ...service.config, host: '127.0.0.1', metricsPort: port }, service.deps.log.child({ part: 'worker' }));
    metricsUrl = `http://127.0.0.1:${port}/metrics`;
  });
  afterAll(async () => {
    await worker?.close();
    await service?.close();
  });

  async function slots(): Promise<{ busy: number; total: number }> {
    const text = await fetch(metricsUrl).then((res) => res.text());
    return { busy: sampleValue(text, 'bulk_import_worker_busy_slots'), total: sampleValue(text, 'bulk_import_worker_slots') };
  }

  function importListings(key: string) {
    return service.request({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(key), payload: { listings: [validListing()] } });
  }

  it('reports WORKER_CONCURRENCY as its slots, none busy while idle', async () => {
    expect(await slots()).toEqual({ busy: 0, total: CONCURRENCY });
  });

  it('counts the jobs in hand, never more than its slots, and frees them once they completed', async () => {
    const key = await service.createKey(await service.createAccount(), ['listings:write']);
    const hold = await holdImports(service.sql);
    const replies = Array.from({ length: CONCURRENCY + 2 }, () => importListings(key));
    await waitForHeldImports(service.sql, CONCURRENCY);
    expect(await slots()).toEqual({ busy: CONCURRENCY, total: CONCURRENCY });
    expect(await service.deps.queue.getJobCounts('active', 'waiting')).toEqual({ active: CONCURRENCY, waiting: 2 });

    await hold.release();
    for (const reply of await Promise.all(replies)) expect(reply.statusCode).toBe(201);
    expect(await slots()).toEqual({ busy: 0, total: CONCURRENCY });
  });

  it('frees the slots of jobs that failed', async () => {
    const account = await service.createAccount();
    const key = await service.createKey(account, ['listings:write']);
    const hold = await holdAccount(service.sql, account.id);
    const replies = Array.from({ length: CONCURRENCY }, () => importListings(key));
    await waitForLockWaiters(service.sql, CONCURRENCY);
    expect((await slots()).busy).toBe(CONCURRENCY);

    // The account goes while its imports wait for it: each finds it gone, a permanent error, and
    // the job fails.
    await hold.release((tx) => tx`delete from accounts where id = ${account.id}`);
    for (const reply of await Promise.all(replies)) {
      expect(reply.statusCode).toBe(503);
      expect(reply.json()).toMatchObject({ error: 'Import failed; nothing was written' });
    }
    expect(await slots()).toEqual({ busy: 0, total: CONCURRENCY });
  });
});

describe('a worker without METRICS_PORT', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => {
    await service?.close();
  });

  it('serves no metrics port', () => {
    expect(service.config.metricsPort).toBeUndefined();
    expect(service.worker?.metricsPort).toBeUndefined();
  });
});
