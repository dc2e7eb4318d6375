import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completionLevel } from '../../src/api/plugins/request-log.js';
import { bearer, validListing } from '../support/fixtures.js';
import { rawRequest, requestHead } from '../support/raw-http.js';
import { startTestService, withLateWorker, type TestService, type TestAccount } from '../support/test-service.js';

type Line = Record<string, unknown>;
interface ErrorResponseDoc {
  content: { 'application/json': { schema: { allOf?: [unknown, { properties: { code: { anyOf: [{ enum: string[] }, unknown] } } }] } } };
}
type Doc = { paths: Record<string, Record<string, { responses: Record<string, ErrorResponseDoc> }>> };

const INFO = 30;
const WARN = 40;
const ERROR = 50;

describe('error codes and the request log, on real requests (docs/errors.md#codes, docs/operators.md#logs)', () => {
  let service: TestService;
  let doc: Doc;
  let account: TestAccount;
  let key: string;

  beforeAll(async () => {
    // No worker: an import waits in the queue holding the account's one in-flight slot until a
    // test starts one (withLateWorker).
    service = await startTestService({ worker: false, env: { ACCOUNT_MAX_IN_FLIGHT: '1', IMPORT_PICKUP_TIMEOUT_MS: '20000' } });
    doc = (await service.request({ method: 'GET', url: '/v1/openapi.json' })).json();
    account = await service.createAccount();
    key = await service.createKey(account, ['listings:write']);
  });
  afterAll(async () => {
    await service?.close();
  });

  /** Sends `options` with a request id of its own; the answer and the lines the API (not a worker) logged for it. */
  async function send(options: InjectOptions & { headers?: Record<string, string> }): Promise<{ res: LightMyRequestResponse; lines: Line[] }> {
    const requestId = `log-${randomBytes(6).toString('hex')}`;
    const res = await service.request({ ...options, headers: { ...options.headers, 'x-request-id': requestId } });
    return { res, lines: service.logs.filter((line) => line.requestId === requestId && line.part === undefined) };
  }

  /** The codes the document lists for a route's status. */
  const documentedCodes = (path: string, method: string, status: number) =>
    doc.paths[path]?.[method]?.responses[String(status)]?.content['application/json'].schema.allOf?.[1].properties.code.anyOf[0].enum;

  /** The request's one line: `request completed`, at `level`, with the code its body carries. */
  function expectOneLine(lines: Line[], res: LightMyRequestResponse, level: number): Line {
    expect(lines.map((line) => line.msg)).toEqual(['request completed']);
    const line = lines[0]!;
    expect(line).toMatchObject({ level, statusCode: res.statusCode, responseTime: expect.any(Number) });
    if (res.statusCode >= 400) expect(line.code).toBe(res.json<{ code: string }>().code);
    return line;
  }

  const keyPrefix = () => key.slice('svc_live_'.length, 'svc_live_'.length + 8);

  it('a success: info, with the account and the key prefix, never the key', async () => {
    const { res, lines } = await send({ method: 'GET', url: '/v1/api/me', headers: bearer(key) });
    expect(res.statusCode).toBe(200);
    const line = expectOneLine(lines, res, INFO);
    expect(line).toMatchObject({ method: 'GET', url: '/v1/api/me', route: '/v1/api/me', accountId: account.id, keyPrefix: keyPrefix() });
    expect(line).not.toHaveProperty('code');
    expect(JSON.stringify(lines)).not.toContain(key.slice(18));
  });

  it('a 401: code invalid_api_key, documented for the route, at warn, and the key it tried is nowhere', async () => {
    const tried = `svc_live_0badc0de_${randomBytes(16).toString('hex')}`;
    const { res, lines } = await send({ method: 'GET', url: '/v1/api/me', headers: bearer(tried), remoteAddress: '192.0.2.41' });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: 'Invalid API key', code: 'invalid_api_key' });
    expect(documentedCodes('/v1/api/me', 'get', 401)).toContain('invalid_api_key');
    const line = expectOneLine(lines, res, WARN);
    expect(line).toMatchObject({ remoteAddress: '192.0.2.41' });
    expect(line).not.toHaveProperty('accountId');
    expect(service.rawLogs()).not.toContain(tried.slice(18));
  });

  it('a 429 of the per-minute limit: code rate_limited_minute, at info (the limit doing its job)', async () => {
    const own = await service.createAccount();
    const ownKey = await service.createKey(own);
    for (let i = 0; i < 300; i += 1) {
      const spent = await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(ownKey) });
      expect(spent.statusCode).toBe(200);
    }
    const { res, lines } = await send({ method: 'GET', url: '/v1/api/me', headers: bearer(ownKey) });
    expect(res.statusCode).toBe(429);
    expect(res.json()).toEqual({ error: 'Rate limit exceeded (per-minute)', code: 'rate_limited_minute', retry_after_sec: expect.any(Number) });
    expect(documentedCodes('/v1/api/me', 'get', 429)).toContain('rate_limited_minute');
    // note: refused by the account's quota, after the key was known: the line says whose
    expect(expectOneLine(lines, res, INFO)).toMatchObject({ accountId: own.id, keyPrefix: ownKey.slice(9, 17) });
  });

  it('a 403 and a 402: refused after the key was known, logged with its account and key prefix', async () => {
    const readOnly = await service.createKey(account, ['listings:read']);
    const scoped = await send({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(readOnly), payload: { listings: [validListing()] } });
    expect(scoped.res.statusCode).toBe(403);
    expect(expectOneLine(scoped.lines, scoped.res, WARN)).toMatchObject({ code: 'missing_scope', accountId: account.id, keyPrefix: readOnly.slice(9, 17) });

    const downgraded = await service.createAccount();
    const downgradedKey = await service.createKey(downgraded);
    await service.sql`update accounts set subscription_tier = 'pro' where id = ${downgraded.id}`;
    const tier = await send({ method: 'GET', url: '/v1/api/me', headers: bearer(downgradedKey) });
    expect(tier.res.statusCode).toBe(402);
    expect(tier.lines[0]).toMatchObject({ code: 'subscription_required', accountId: downgraded.id, keyPrefix: downgradedKey.slice(9, 17) });
  });

  it('a 429 of the in-flight cap: code too_many_concurrent_requests, told apart from the rate limits', async () => {
    const running = service.request({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(key), payload: { listings: [validListing()] } });
    await expect.poll(async () => (await service.deps.queue.getJobCounts('waiting')).waiting, { timeout: 5_000 }).toBeGreaterThanOrEqual(1);
    const { res, lines } = await send({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(key), payload: { listings: [validListing()] } });
    expect(res.statusCode).toBe(429);
    expect(res.json()).toEqual({ error: 'Too many concurrent requests', code: 'too_many_concurrent_requests', retry_after_sec: 1 });
    expect(documentedCodes('/v1/api/listings/bulk', 'post', 429)).toContain('too_many_concurrent_requests');
    expectOneLine(lines, res, INFO);
    expect((await withLateWorker(service, () => running)).statusCode).toBe(201);
  });

  it('a 429 of the lockout: code locked_out, at warn', async () => {
    const ip = '198.51.100.77';
    for (let i = 0; i < 20; i += 1) {
      const failed = await service.request({ method: 'GET', url: '/v1/api/me', headers: bearer('nope'), remoteAddress: ip });
      expect(failed.statusCode).toBe(401);
    }
    const { res, lines } = await send({ method: 'GET', url: '/v1/api/me', headers: bearer(key), remoteAddress: ip });
    expect(res.statusCode).toBe(429);
    expect(res.json()).toEqual({ error: 'Too many failed authentication attempts', code: 'locked_out', retry_after_sec: expect.any(Number) });
    expect(documentedCodes('/v1/api/me', 'get', 429)).toContain('locked_out');
    expectOneLine(lines, res, WARN);
  });

  it('a 404 of an unknown route: code not_found, at info, with no route', async () => {
    const { res, lines } = await send({ method: 'GET', url: '/v1/nowhere?token=x' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: 'Not found', code: 'not_found' });
    const line = expectOneLine(lines, res, INFO);
    expect(line).toMatchObject({ url: '/v1/nowhere?[redacted]' });
    expect(line).not.toHaveProperty('route');
  });

  it('a long path: at most 256 characters of it, then …, the query still redacted', async () => {
    const path = `/v1/${'p'.repeat(1_000)}`;
    const { res, lines } = await send({ method: 'GET', url: `${path}?token=x` });
    expect(res.statusCode).toBe(404);
    expect(expectOneLine(lines, res, INFO)).toMatchObject({ url: `${path.slice(0, 256)}…?[redacted]` });
  });

  it('a 413: code body_too_large, documented for the route, with the account that sent it', async () => {
    const { res, lines } = await send({
      method: 'POST',
      url: '/v1/api/listings/bulk',
      headers: { ...bearer(key), 'content-type': 'application/json' },
      payload: `{"listings": [${'"x",'.repeat(600_000)}"x"]}`,
    });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual({ error: 'Request body too large', code: 'body_too_large', limit_bytes: 2_097_152 });
    expect(documentedCodes('/v1/api/listings/bulk', 'post', 413)).toEqual(['body_too_large']);
    expect(expectOneLine(lines, res, INFO)).toMatchObject({ accountId: account.id, keyPrefix: keyPrefix() });
  });

  it('a 400: code invalid_json, at info', async () => {
    const { res, lines } = await send({ method: 'POST', url: '/v1/api/keys', headers: { ...bearer(account.sessionToken), 'content-type': 'application/json' }, payload: '{' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'Invalid JSON body', code: 'invalid_json' });
    expect(documentedCodes('/v1/api/keys', 'post', 400)).toContain('invalid_json');
    expectOneLine(lines, res, INFO);
  });

  it('an import: its import id on the line, and a dry run says so (the query string itself stays redacted)', async () => {
    const written = await withLateWorker(service, () => send({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(key), payload: { listings: [validListing()] } }));
    expect(written.res.statusCode).toBe(201);
    const importId = written.res.json<{ import_id: string }>().import_id;
    expect(expectOneLine(written.lines, written.res, INFO)).toMatchObject({ importId, accountId: account.id, keyPrefix: keyPrefix() });
    expect(written.lines[0]).not.toHaveProperty('dryRun');

    const read = await send({ method: 'GET', url: `/v1/api/imports/${importId}`, headers: bearer(key) });
    expect(expectOneLine(read.lines, read.res, INFO)).toMatchObject({ importId, route: '/v1/api/imports/:id' });

    const dry = await withLateWorker(service, () =>
      send({ method: 'POST', url: '/v1/api/listings/bulk?dry_run=true', headers: bearer(key), payload: { listings: [validListing()] } }),
    );
    expect(dry.res.statusCode).toBe(200);
    const line = expectOneLine(dry.lines, dry.res, INFO);
    expect(line).toMatchObject({ dryRun: true, url: '/v1/api/listings/bulk?[redacted]' });
    expect(line).not.toHaveProperty('importId');
  });

  it('key management: the session\'s account, never the token', async () => {
    const { res, lines } = await send({ method: 'GET', url: '/v1/api/keys', headers: bearer(account.sessionToken) });
    expect(res.statusCode).toBe(200);
    expect(expectOneLine(lines, res, INFO)).toMatchObject({ accountId: account.id });
    expect(lines[0]).not.toHaveProperty('keyPrefix');
    expect(service.rawLogs()).not.toContain(account.sessionToken.split('.')[2]!);
  });

  it('a probe: the health check writes no line at info', async () => {
    const { res, lines } = await send({ method: 'GET', url: '/v1/health' });
    expect(res.statusCode).toBe(200);
    expect(lines).toEqual([]);
  });

  it('a 500: one line, at error, with the error that caused it and code internal_error', async () => {
    const unknownKey = `svc_live_${'c'.repeat(8)}_${'d'.repeat(32)}`;
    // A table the key lookup needs goes missing: not a dependency outage, a bug-like failure.
    await service.sql`alter table api_keys rename to api_keys_away`;
    try {
      const { res, lines } = await send({ method: 'GET', url: '/v1/api/me', headers: bearer(unknownKey) });
      expect(res.statusCode).toBe(500);
      expect(res.json()).toMatchObject({ error: 'Internal server error', code: 'internal_error' });
      const line = expectOneLine(lines, res, ERROR);
      expect(line.err).toMatchObject({ message: expect.stringContaining('api_keys') });
    } finally {
      await service.sql`alter table api_keys_away rename to api_keys`;
    }
  });

  it('a framework error: the router\'s 400 malformed_url, its one line written all the same', async () => {
    await service.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (service.app.server.address() as AddressInfo).port;
    const reply = await rawRequest(port, { text: requestHead('GET', '/v1/api/%zz') });
    expect(reply.status).toBe(400);
    expect(JSON.parse(reply.body)).toEqual({ error: 'Malformed request URL', code: 'malformed_url' });
    const requestId = reply.headers['x-request-id'];
    await expect.poll(() => service.logs.filter((line) => line.requestId === requestId)).toEqual([
      expect.objectContaining({ msg: 'request completed', level: INFO, statusCode: 400, code: 'malformed_url', frameworkCode: 'FST_ERR_BAD_URL' }),
    ]);
    // Node's parser refuses a broken Content-Length before Fastify sees it: one line too.
    const broken = await rawRequest(port, { text: requestHead('POST', '/v1/api/listings/bulk', { 'content-length': 'abc' }) });
    expect(JSON.parse(broken.body)).toEqual({ error: 'Bad request', code: 'bad_request' });
    await expect.poll(() => service.logs.filter((line) => line.requestId === broken.headers['x-request-id'])).toEqual([
      expect.objectContaining({ msg: 'request completed', level: INFO, statusCode: 400, code: 'bad_request' }),
    ]);
  });
});

describe('completionLevel: the level of a request\'s line by its outcome', () => {
  it.each([
    [200, undefined, '/v1/api/me', 'info'],
    [201, undefined, '/v1/api/listings/bulk', 'info'],
    [400, 'invalid_json', '/v1/api/listings/bulk', 'info'],
    [401, 'missing_api_key', '/v1/api/me', 'warn'],
    [401, 'invalid_session_token', '/v1/api/keys', 'warn'],
    [401, 'admin_auth_required', '/metrics', 'warn'],
    [402, 'subscription_required', '/v1/api/me', 'info'],
    [403, 'missing_scope', '/v1/api/listings/bulk', 'warn'],
    [403, 'origin_not_allowed', '/v1/health', 'warn'],
    [404, 'not_found', undefined, 'info'],
    [413, 'body_too_large', '/v1/api/listings/bulk', 'info'],
    [422, 'idempotency_key_reused', '/v1/api/listings/bulk', 'info'],
    [429, 'rate_limited_minute', '/v1/api/me', 'info'],
    [429, 'rate_limited_day', '/v1/api/me', 'info'],
    [429, 'too_many_concurrent_requests', '/v1/api/listings/bulk', 'info'],
    [429, 'active_key_limit', '/v1/api/keys', 'info'],
    [429, 'locked_out', '/v1/api/me', 'warn'],
    [429, 'locked_out', '/metrics', 'warn'],
    [500, 'internal_error', '/v1/api/me', 'error'],
    [500, 'internal_error', '/v1/health', 'error'],
    [503, 'overloaded', '/v1/api/listings/bulk', 'error'],
    [504, 'import_still_running', '/v1/api/listings/bulk', 'error'],
    [200, undefined, '/v1/health', 'debug'],
    [503, undefined, '/v1/health', 'debug'],
    [200, undefined, '/metrics', 'debug'],
    [200, undefined, '/admin/queues/static/main.js', 'debug'],
  ] as const)('%i %s on %s: %s', (status, code, route, level) => {
    expect(completionLevel(status, code, route)).toBe(level);
  });
});
