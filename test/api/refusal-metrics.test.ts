import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RATE_LIMITED_WINDOWS } from '../../src/api/api-metrics.js';
import { newPartner } from '../support/bulk-endpoint.js';
import { bearer, validListing } from '../support/fixtures.js';
import { parseSamples, sampleValue } from '../support/prometheus.js';
import { startTestService, withLateWorker, type TestService } from '../support/test-service.js';

const ADMIN_USER = 'refusals-ops';
const ADMIN_PASSWORD = 'refusals-password-0123';
const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });
const ADMIN = basic(ADMIN_USER, ADMIN_PASSWORD);

const ndjson = (rows: object[]) => rows.map((row) => JSON.stringify(row)).join('\n') + '\n';

/**
 * Every 429 an account limit or a lockout answers is counted (issue 25, "Count every refusal"):
 * bulk_import_rate_limited_total by window, bulk_import_auth_lockouts_total and
 * bulk_import_admin_lockouts_total, each read from the API's own GET /metrics.
 */
describe('GET /metrics counts every 429', () => {
  let service: TestService;

  beforeAll(async () => {
    // No worker: a bulk import waits in the queue holding its slot, a file import stays queued.
    service = await startTestService({
      worker: false,
      env: { ADMIN_USER, ADMIN_PASSWORD, ACCOUNT_MAX_IN_FLIGHT: '1', ACCOUNT_MAX_FILE_IMPORTS: '1', IMPORT_PICKUP_TIMEOUT_MS: '20000' },
    });
  });
  afterAll(async () => {
    await service?.close();
  });

  async function scrape(): Promise<string> {
    const res = await service.request({ method: 'GET', url: '/metrics', headers: ADMIN });
    expect(res.statusCode).toBe(200);
    return res.body;
  }

  /** How much each series moved while `act` ran. */
  async function deltas(act: () => Promise<void>): Promise<(name: string, labels?: Record<string, string>) => number> {
    const before = await scrape();
    await act();
    const after = await scrape();
    return (name, labels = {}) => sampleValue(after, name, labels) - sampleValue(before, name, labels);
  }

  const listings = (key: string) => service.request({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(key), payload: { listings: [validListing()] } });
  const upload = (key: string, payload: string | Readable) =>
    service.request({ method: 'POST', url: '/v1/api/imports?kind=listings', headers: { ...bearer(key), 'content-type': 'application/x-ndjson' }, payload });

  it('exposes every window of bulk_import_rate_limited_total and both lockout counters from 0', async () => {
    const text = await scrape();
    const windows = parseSamples(text).filter((s) => s.name === 'bulk_import_rate_limited_total').map((s) => s.labels.window);
    expect(windows.sort()).toEqual([...RATE_LIMITED_WINDOWS].sort());
    for (const name of ['bulk_import_auth_lockouts_total', 'bulk_import_admin_lockouts_total']) {
      expect(parseSamples(text).filter((s) => s.name === name), name).toHaveLength(1);
    }
  });

  it('counts the concurrency cap\'s 429 "Too many concurrent requests" under window="concurrency"', async () => {
    const { key } = await newPartner(service);
    let running: Promise<LightMyRequestResponse> | undefined;
    let refused: LightMyRequestResponse | undefined;
    const delta = await deltas(async () => {
      running = listings(key);
      // note: the job is added after the slot was taken, so a waiting job means the slot is held.
      await expect.poll(async () => (await service.deps.queue.getJobCounts('waiting')).waiting, { timeout: 5_000 }).toBe(1);
      refused = await listings(key);
    });
    expect(refused?.statusCode).toBe(429);
    expect(refused?.json()).toMatchObject({ error: 'Too many concurrent requests' });
    expect(delta('bulk_import_rate_limited_total', { window: 'concurrency' })).toBe(1);
    for (const window of ['per-minute', 'per-day', 'file-imports']) expect(delta('bulk_import_rate_limited_total', { window }), window).toBe(0);
    expect((await withLateWorker(service, () => running!)).statusCode).toBe(201);
  });

  it('counts the 429 "Too many file imports in progress" before the body is read under window="file-imports"', async () => {
    const { account, key } = await newPartner(service, { tier: 'global' });
    await service.sql`
      insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, source, created_at)
      values (${randomUUID()}, ${account.id}, 'listings', 'waiting', 1, 0, 0, '[]', 'running', 'file', now())`;
    let refused: LightMyRequestResponse | undefined;
    const delta = await deltas(async () => {
      refused = await upload(key, ndjson([validListing()]));
    });
    expect(refused?.statusCode).toBe(429);
    expect(refused?.json()).toMatchObject({ error: 'Too many file imports in progress' });
    expect(delta('bulk_import_rate_limited_total', { window: 'file-imports' })).toBe(1);
  });

  /** A file whose first row has arrived and whose end waits for `finish`. */
  function fileArrivingSlowly(): { slow: Readable; finish: () => void } {
    const slow = new Readable({ read() {} });
    slow.push(`${JSON.stringify(validListing())}\n`);
    return { slow, finish: () => slow.push(null) };
  }

  it('counts the 429 "Too many file imports in progress" of an upload whose account\'s place an upload still arriving holds', async () => {
    const { key } = await newPartner(service, { tier: 'global' });
    const { slow, finish } = fileArrivingSlowly();
    let slowReply: LightMyRequestResponse | undefined;
    let secondReply: LightMyRequestResponse | undefined;
    const delta = await deltas(async () => {
      const slowUpload = upload(key, slow);
      await expect.poll(async () => (await service.sql<{ n: number }[]>`select count(*)::int as n from imports where state = 'uploading'`)[0]!.n, { timeout: 5_000 }).toBe(1);
      secondReply = await upload(key, ndjson([validListing()]));
      finish();
      slowReply = await slowUpload;
    });
    expect(secondReply?.statusCode).toBe(429);
    expect(secondReply?.json()).toMatchObject({ error: 'Too many file imports in progress' });
    expect(slowReply?.statusCode).toBe(202);
    expect(delta('bulk_import_rate_limited_total', { window: 'file-imports' })).toBe(1);
  });

  it('counts the 429 of an upload whose place another took while it was not heard of, refused as it is accepted, keeping nothing', async () => {
    const { account, key } = await newPartner(service, { tier: 'global' });
    const { slow, finish } = fileArrivingSlowly();
    let slowReply: LightMyRequestResponse | undefined;
    let otherReply: LightMyRequestResponse | undefined;
    const delta = await deltas(async () => {
      const slowUpload = upload(key, slow);
      await expect.poll(async () => (await service.sql<{ n: number }[]>`select count(*)::int as n from imports where state = 'uploading' and account_id = ${account.id}`)[0]!.n, { timeout: 5_000 }).toBe(1);
      // as if its process had stopped saying it receives it (a pause longer than UPLOAD_ABANDONED_AFTER_MS)
      await service.sql`update imports set upload_seen_at = now() - interval '1 hour' where state = 'uploading' and account_id = ${account.id}`;
      otherReply = await upload(key, ndjson([validListing()]));
      finish();
      slowReply = await slowUpload;
    });
    expect(otherReply?.statusCode).toBe(202);
    expect(slowReply?.statusCode).toBe(429);
    expect(slowReply?.json()).toMatchObject({ error: 'Too many file imports in progress' });
    expect(delta('bulk_import_rate_limited_total', { window: 'file-imports' })).toBe(1);
    const [kept] = await service.sql<{ n: number }[]>`select count(*)::int as n from imports where account_id = ${account.id}`;
    expect(kept!.n).toBe(1);
  });

  it('counts the 429 "Rate limit exceeded (per-day)" of a file the day quota cannot take under window="per-day"', async () => {
    const { account, key } = await newPartner(service);
    expect((await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key) })).statusCode).toBe(200);
    // Enterprise: 100,000 a day. The upload itself is the 100,000th; its 450 rows need 2 more.
    expect(await service.deps.redis.set(`${service.config.redisPrefix}:quota-day:${account.id}`, '99999', 'KEEPTTL')).toBe('OK');
    let refused: LightMyRequestResponse | undefined;
    const delta = await deltas(async () => {
      refused = await upload(key, ndjson(Array.from({ length: 450 }, () => validListing())));
    });
    expect(refused?.statusCode).toBe(429);
    expect(refused?.json()).toMatchObject({ error: 'Rate limit exceeded (per-day)' });
    expect(delta('bulk_import_rate_limited_total', { window: 'per-day' })).toBe(1);
    expect(delta('bulk_import_rate_limited_total', { window: 'file-imports' })).toBe(0);
  });

  it('counts a locked-out address\'s 429 on /metrics in bulk_import_admin_lockouts_total, not in the API\'s lockouts', async () => {
    const remoteAddress = '198.51.100.25';
    const wrong = basic(ADMIN_USER, 'wrong-password-0123');
    let refused: LightMyRequestResponse | undefined;
    const delta = await deltas(async () => {
      for (let i = 0; i < 10; i += 1) expect((await service.request({ method: 'GET', url: '/metrics', headers: wrong, remoteAddress })).statusCode).toBe(401);
      refused = await service.request({ method: 'GET', url: '/admin/queues', headers: ADMIN, remoteAddress });
    });
    expect(refused?.statusCode).toBe(429);
    expect(refused?.json()).toMatchObject({ error: 'Too many failed authentication attempts' });
    expect(delta('bulk_import_admin_lockouts_total')).toBe(1);
    expect(delta('bulk_import_auth_lockouts_total')).toBe(0);
  });
});
