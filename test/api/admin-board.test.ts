import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { bearer, validListing } from '../support/fixtures.js';
import { startTestService, type TestAccount, type TestService } from '../support/test-service.js';

const ADMIN_USER = 'ops';
const ADMIN_PASSWORD = 'board-password-0123';
const REFUSED = { error: 'Authentication required', code: 'admin_auth_required' };

function basic(user: string, password: string): { authorization: string } {
  return { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` };
}

function expectRefused(res: LightMyRequestResponse): void {
  expect(res.statusCode).toBe(401);
  expect(res.headers['www-authenticate']).toBe('Basic realm="bulk-import admin"');
  expect(res.json()).toEqual(REFUSED);
}

describe('Bull Board and GET /metrics without ADMIN_USER / ADMIN_PASSWORD', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
  });
  afterAll(async () => {
    await service?.close();
  });

  it.each(['/admin/queues', '/admin/queues/api/queues', '/metrics'])('answers GET %s with 404, even with basic-auth credentials', async (url) => {
    const res = await service.request({ method: 'GET', url, headers: basic(ADMIN_USER, ADMIN_PASSWORD) });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: 'Not found', code: 'not_found' });
  });

  it('logs that the board and /metrics are disabled, and why', () => {
    const messages = service.logs.map((line) => String(line.msg));
    expect(messages).toContainEqual(expect.stringMatching(/Bull Board \(\/admin\/queues\) and GET \/metrics are disabled: ADMIN_USER and ADMIN_PASSWORD are not set/));
  });
});

describe('GET /admin/queues (ADMIN_USER and ADMIN_PASSWORD set)', () => {
  let service: TestService;
  let account: TestAccount;
  let apiKey: string;

  beforeAll(async () => {
    service = await startTestService({ env: { ADMIN_USER, ADMIN_PASSWORD } });
    account = await service.createAccount();
    apiKey = await service.createKey(account, ['listings:write']);
  });
  afterAll(async () => {
    await service?.close();
  });

  it('logs that the board is mounted', () => {
    expect(service.logs.map((line) => line.msg)).toContain('Bull Board (/admin/queues) and GET /metrics are mounted behind basic auth');
  });

  describe('refuses with 401 and WWW-Authenticate: Basic', () => {
    it.each([
      { name: 'no credentials', headers: (): Record<string, string> => ({}) },
      { name: 'a wrong password', headers: () => basic(ADMIN_USER, `${ADMIN_PASSWORD}x`) },
      { name: 'the password with a wrong user', headers: () => basic('admin', ADMIN_PASSWORD) },
      { name: 'empty credentials', headers: () => basic('', '') },
      { name: 'the password alone as a Bearer token', headers: () => bearer(ADMIN_PASSWORD) },
      { name: 'a malformed Basic header', headers: () => ({ authorization: 'Basic !!!' }) },
    ])('$name', async ({ headers }) => {
      expectRefused(await service.request({ method: 'GET', url: '/admin/queues', headers: headers() }));
    });

    it('an API key as Bearer', async () => {
      expectRefused(await service.request({ method: 'GET', url: '/admin/queues', headers: bearer(apiKey) }));
    });

    it('a session token as Bearer', async () => {
      expectRefused(await service.request({ method: 'GET', url: '/admin/queues', headers: bearer(account.sessionToken) }));
    });

    it.each(['/admin/queues/api/queues', '/admin/queues/queue/imports', '/admin/queues/static/images/logo.svg'])(
      'the board\'s pages, API and assets too (%s)',
      async (url) => {
        expectRefused(await service.request({ method: 'GET', url }));
      },
    );
  });

  it('serves the board with the right credentials', async () => {
    const res = await service.request({ method: 'GET', url: '/admin/queues', headers: basic(ADMIN_USER, ADMIN_PASSWORD) });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('/admin/queues/');
  });

  describe('a completed import on the board', () => {
    const requestId = `board-${Date.now()}`;
    let jobId: string;
    let job: Record<string, unknown>;

    beforeAll(async () => {
      const imported = await service.request({
        method: 'POST',
        url: '/v1/api/listings/bulk',
        headers: { ...bearer(apiKey), 'x-request-id': requestId },
        payload: { listings: [validListing({ title: 'Secret-free dragon' }), validListing(), validListing({ price_cents: 1.5 })] },
      });
      expect(imported.statusCode).toBe(201);
      const res = await service.request({
        method: 'GET',
        url: '/admin/queues/api/queues?activeQueue=imports&status=completed&page=1&jobsPerPage=50',
        headers: basic(ADMIN_USER, ADMIN_PASSWORD),
      });
      expect(res.statusCode).toBe(200);
      const queue = res.json<{ queues: { name: string; jobs: Record<string, unknown>[] }[] }>().queues.find((q) => q.name === 'imports');
      const found = queue?.jobs.find((j) => (j.data as { requestId?: string }).requestId === requestId);
      expect(found).toBeDefined();
      job = found!;
      jobId = String(job.id);
    });

    it('is listed under its kind with account, kind, row count, skipped count and request id instead of its rows', () => {
      expect(job.name).toBe('listings');
      expect(job.data).toEqual({ accountId: account.id, kind: 'listings', rows: 2, skipped: 1, requestId });
    });

    it('shows the same summary on the job\'s own page, and neither rows nor keys', async () => {
      const res = await service.request({ method: 'GET', url: `/admin/queues/api/queues/imports/${jobId}`, headers: basic(ADMIN_USER, ADMIN_PASSWORD) });
      expect(res.statusCode).toBe(200);
      expect(res.json<{ job: { data: unknown } }>().job.data).toEqual({ accountId: account.id, kind: 'listings', rows: 2, skipped: 1, requestId });
      expect(res.body).not.toContain('Secret-free dragon');
      expect(res.body).not.toContain('svc_live_');
      expect(res.body).not.toContain(apiKey);
    });

    it.each([
      { action: 'retry', url: (id: string) => `/admin/queues/api/queues/imports/${id}/retry` },
      { action: 'remove', url: (id: string) => `/admin/queues/api/queues/imports/${id}/clean` },
      { action: 'clean all completed', url: () => '/admin/queues/api/queues/imports/clean/completed' },
      { action: 'empty the queue', url: () => '/admin/queues/api/queues/imports/empty' },
    ])('is read-only: $action answers 405 and the job stays', async ({ url }) => {
      const res = await service.request({ method: 'PUT', url: url(jobId), headers: basic(ADMIN_USER, ADMIN_PASSWORD) });
      expect(res.statusCode).toBe(405);
      expect(await service.deps.queue.getJobState(jobId)).toBe('completed');
    });
  });

  describe('a file import on the board', () => {
    let importId: string;

    beforeAll(async () => {
      const file = [validListing(), validListing()].map((row) => JSON.stringify(row)).join('\n') + '\n';
      const uploaded = await service.request({
        method: 'POST',
        url: '/v1/api/imports?kind=listings',
        headers: { ...bearer(apiKey), 'content-type': 'application/x-ndjson' },
        payload: file,
      });
      expect(uploaded.statusCode).toBe(202);
      importId = uploaded.json<{ import: { id: string } }>().import.id;
      await vi.waitFor(async () => expect(await service.deps.fileImportQueue.getJobState(importId)).toBe('completed'), { timeout: 15_000, interval: 50 });
    });

    it('is listed in the file-imports queue, beside imports, under its kind with its import id and progress', async () => {
      const res = await service.request({
        method: 'GET',
        url: '/admin/queues/api/queues?activeQueue=file-imports&status=completed&page=1&jobsPerPage=50',
        headers: basic(ADMIN_USER, ADMIN_PASSWORD),
      });
      expect(res.statusCode).toBe(200);
      const queues = res.json<{ queues: { name: string; jobs: Record<string, unknown>[] }[] }>().queues;
      expect(queues.map((queue) => queue.name)).toEqual(expect.arrayContaining(['imports', 'file-imports']));
      const job = queues.find((queue) => queue.name === 'file-imports')?.jobs.find((j) => j.id === importId);
      expect(job).toMatchObject({ name: 'listings', data: { importId }, progress: { processed: 2, total: 2 } });
    });

    it('shows a log line per chunk on the job\'s page', async () => {
      const res = await service.request({ method: 'GET', url: `/admin/queues/api/queues/file-imports/${importId}/logs`, headers: basic(ADMIN_USER, ADMIN_PASSWORD) });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual(['chunk: 2 rows written (2 of 2)', 'completed: no row left to write']);
    });

    it('is read-only: retry answers 405 and the job stays completed', async () => {
      const res = await service.request({ method: 'PUT', url: `/admin/queues/api/queues/file-imports/${importId}/retry`, headers: basic(ADMIN_USER, ADMIN_PASSWORD) });
      expect(res.statusCode).toBe(405);
      expect(await service.deps.fileImportQueue.getJobState(importId)).toBe('completed');
    });
  });

  it('never logs the admin password or the basic-auth header', async () => {
    const wrong = basic(ADMIN_USER, 'wrong-password-0123');
    expectRefused(await service.request({ method: 'GET', url: '/admin/queues', headers: wrong }));
    expect((await service.request({ method: 'GET', url: '/admin/queues', headers: basic(ADMIN_USER, ADMIN_PASSWORD) })).statusCode).toBe(200);
    const raw = service.rawLogs();
    expect(raw).toContain('operator endpoint refused');
    expect(raw).not.toContain(ADMIN_PASSWORD);
    expect(raw).not.toContain('wrong-password-0123');
    expect(raw).not.toContain(basic(ADMIN_USER, ADMIN_PASSWORD).authorization.slice(6));
  });

  describe('lockout after 10 wrong logins from one address within 5 minutes', () => {
    const ip = '198.51.100.50';
    const board = (headers: Record<string, string>, remoteAddress = ip) =>
      service.request({ method: 'GET', url: '/admin/queues', headers, remoteAddress });

    it('does not lock out after 9 wrong logins, nor for requests without credentials', async () => {
      const other = '198.51.100.51';
      for (let i = 0; i < 9; i += 1) expectRefused(await board(basic(ADMIN_USER, `wrong-${i}`), other));
      for (let i = 0; i < 5; i += 1) expectRefused(await board({}, other));
      expect((await board(basic(ADMIN_USER, ADMIN_PASSWORD), other)).statusCode).toBe(200);
    });

    it('refuses the board and /metrics with 429 and Retry-After after the 10th, even with the right password', async () => {
      for (let i = 0; i < 10; i += 1) expectRefused(await board(basic(ADMIN_USER, `wrong-${i}`)));
      for (const url of ['/admin/queues', '/admin/queues/api/queues', '/metrics']) {
        const res = await service.request({ method: 'GET', url, headers: basic(ADMIN_USER, ADMIN_PASSWORD), remoteAddress: ip });
        expect(res.statusCode, url).toBe(429);
        const body = res.json<{ error: string; retry_after_sec: number }>();
        expect(body.error).toBe('Too many failed authentication attempts');
        expect(body.retry_after_sec).toBeGreaterThan(840);
        expect(body.retry_after_sec).toBeLessThanOrEqual(900);
        expect(res.headers['retry-after']).toBe(String(body.retry_after_sec));
      }
    });

    it('keeps its own count: the API is not locked out for that address, and another address may log in', async () => {
      const me = await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(apiKey), remoteAddress: ip });
      expect(me.statusCode).toBe(200);
      expect((await board(basic(ADMIN_USER, ADMIN_PASSWORD), '198.51.100.52')).statusCode).toBe(200);
    });
  });

  it('still refuses a foreign Origin on the board with 403', async () => {
    const res = await service.request({
      method: 'GET',
      url: '/admin/queues/api/queues',
      headers: { ...basic(ADMIN_USER, ADMIN_PASSWORD), origin: 'https://evil.example.test' },
    });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({ error: 'Cross-origin requests are not allowed', code: 'origin_not_allowed' });
  });
});
