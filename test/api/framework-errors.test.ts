import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorker } from '../../src/worker/worker.js';
import { validListing } from '../support/fixtures.js';
import { rawRequest, requestHead } from '../support/raw-http.js';
import { startTestService, type TestService } from '../support/test-service.js';

const REQUEST_ID = /^[0-9a-f-]{36}$/;

async function listening(service: TestService): Promise<number> {
  await service.app.listen({ port: 0, host: '127.0.0.1' });
  return (service.app.server.address() as AddressInfo).port;
}

describe('errors raised by the framework, in the service\'s shape', () => {
  let service: TestService;
  let port: number;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
    port = await listening(service);
  });
  afterAll(async () => {
    await service?.close();
  });

  it.each([
    {
      name: 'an over-long path parameter',
      text: requestHead('DELETE', `/v1/api/keys/${'a'.repeat(600)}`),
      status: 414,
      error: 'Request URL too long',
      code: 'url_too_long',
      notEchoed: 'aaaaaaaa',
    },
    { name: 'bad percent-encoding', text: requestHead('GET', '/v1/api/%zz/<script>'), status: 400, error: 'Malformed request URL', code: 'malformed_url', notEchoed: 'script' },
    { name: 'a Content-Length that is not a number', text: requestHead('POST', '/v1/api/listings/bulk', { 'content-length': 'abc' }), status: 400, error: 'Bad request', code: 'bad_request', notEchoed: 'abc' },
    {
      name: 'two different Content-Lengths',
      text: `${requestHead('POST', '/v1/api/listings/bulk', { 'content-length': '5' }).slice(0, -2)}Content-Length: 6\r\n\r\nhello`,
      status: 400,
      error: 'Bad request',
      code: 'bad_request',
      notEchoed: 'hello',
    },
    {
      name: 'headers too large',
      text: requestHead('GET', '/v1/health', { 'x-big': 'b'.repeat(20_000) }),
      status: 431,
      error: 'Request headers too large',
      code: 'headers_too_large',
      notEchoed: 'bbbbbbbb',
    },
  ])('$name: $status {error: "$error", code: "$code"} with X-Request-Id, nothing echoed, connection closed', async ({ text, status, error, code, notEchoed }) => {
    const reply = await rawRequest(port, { text });
    expect(reply.status).toBe(status);
    expect(JSON.parse(reply.body)).toEqual({ error, code });
    expect(reply.headers['content-type']).toMatch(/^application\/json/);
    expect(reply.headers['x-request-id']).toMatch(REQUEST_ID);
    expect(reply.body).not.toContain(notEchoed);
    expect(reply.closedAfterMs).toBeDefined();
  });
});

describe('REQUEST_TIMEOUT_MS, FILE_UPLOAD_TIMEOUT_MS and refusals before the body is read', () => {
  let service: TestService;
  let port: number;
  let apiKey: string;

  beforeAll(async () => {
    service = await startTestService({ worker: false, env: { REQUEST_TIMEOUT_MS: '1500', FILE_UPLOAD_TIMEOUT_MS: '5000' } });
    port = await listening(service);
    const account = await service.createAccount();
    apiKey = await service.createKey(account, ['listings:write']);
  });
  afterAll(async () => {
    await service?.close();
  });

  it('answers a body that trickles in with 408 {error: "Request timeout"} and closes the connection', async () => {
    const body = JSON.stringify({ listings: [validListing()] });
    const reply = await rawRequest(port, {
      text: requestHead('POST', '/v1/api/listings/bulk', { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body.length),
      // one byte every 200 ms: the whole body would take over a minute
      trickle: body.split(''),
      trickleEveryMs: 200,
      waitMs: 8_000,
    });
    expect(reply.status).toBe(408);
    expect(JSON.parse(reply.body)).toEqual({ error: 'Request timeout', code: 'request_timeout' });
    expect(reply.headers['x-request-id']).toMatch(REQUEST_ID);
    expect(reply.closedAfterMs).toBeDefined();
    // its one log line, under the id the answer carried
    expect(service.logs.filter((line) => line.requestId === reply.headers['x-request-id'])).toEqual([
      expect.objectContaining({ msg: 'request completed', level: 30, statusCode: 408, code: 'request_timeout', deadlineMs: 1_500, route: '/v1/api/listings/bulk' }),
    ]);
  });

  /** A file of `rows` listings sent a line every `everyMs`, to the file-import route. */
  const trickledFile = (rows: number, everyMs: number, waitMs: number) => {
    const lines = Array.from({ length: rows }, (_, n) => `${JSON.stringify(validListing({ title: `Slow ${n}` }))}\n`);
    return rawRequest(port, {
      text: requestHead('POST', '/v1/api/imports?kind=listings', { authorization: `Bearer ${apiKey}`, 'content-type': 'application/x-ndjson', connection: 'close' }, lines.join('').length),
      trickle: lines,
      trickleEveryMs: everyMs,
      waitMs,
    });
  };

  it('gives a file upload FILE_UPLOAD_TIMEOUT_MS instead: a file that takes twice REQUEST_TIMEOUT_MS to arrive is taken', async () => {
    // 15 lines, one every 200 ms: some 3 s, twice REQUEST_TIMEOUT_MS and within FILE_UPLOAD_TIMEOUT_MS
    const reply = await trickledFile(15, 200, 8_000);
    expect(reply.status).toBe(202);
    expect(JSON.parse(reply.body)).toMatchObject({ import: { state: 'queued', rows: { received: 15 } } });
  });

  it('answers a file that trickles in past FILE_UPLOAD_TIMEOUT_MS with 408 and keeps nothing of it', async () => {
    const before = await service.sql<{ n: number }[]>`select count(*)::int as n from imports`;
    // 60 lines, one every 200 ms: 12 s, past the 5 s
    const reply = await trickledFile(60, 200, 10_000);
    expect(reply.status).toBe(408);
    expect(JSON.parse(reply.body)).toEqual({ error: 'Request timeout', code: 'request_timeout' });
    expect(reply.closedAfterMs).toBeDefined();
    expect(reply.closedAfterMs!).toBeLessThan(8_000);
    // note: the upload, never visible, is dropped by its request as it ends, just after the answer
    await expect.poll(async () => (await service.sql<{ n: number }[]>`select count(*)::int as n from imports`)[0]!.n, { timeout: 3_000, interval: 50 }).toBe(before[0]!.n);
  });

  it('answers headers that trickle in with 408 too', async () => {
    const reply = await rawRequest(port, {
      text: 'GET /v1/api/me HTTP/1.1\r\nHost: api.example.test\r\n',
      trickle: Array.from({ length: 60 }, (_, i) => `X-Slow-${i}: 1\r\n`),
      trickleEveryMs: 200,
      waitMs: 8_000,
    });
    expect(reply.status).toBe(408);
    expect(reply.closedAfterMs).toBeDefined();
  });

  it('closes the connection after a refusal sent before the body was read (401), however slowly the body comes', async () => {
    const reply = await rawRequest(port, {
      text: requestHead('POST', '/v1/api/listings/bulk', { authorization: 'Bearer not-a-key', 'content-type': 'application/json' }, 100_000),
      trickle: Array.from({ length: 100 }, () => 'x'),
      trickleEveryMs: 200,
      waitMs: 8_000,
    });
    expect(reply.status).toBe(401);
    expect(reply.headers.connection).toBe('close');
    expect(reply.closedAfterMs).toBeDefined();
    expect(reply.closedAfterMs!).toBeLessThan(5_000);
  });

  it('does not bound the wait for an import: a body that arrived in time gets its 201 after REQUEST_TIMEOUT_MS', async () => {
    const body = JSON.stringify({ listings: [validListing()] });
    const sent = rawRequest(port, {
      text:
        requestHead('POST', '/v1/api/listings/bulk', { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', connection: 'close' }, body.length) +
        body,
      waitMs: 15_000,
    });
    // No worker yet: the import waits in the queue well past the request timeout.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const worker = await startWorker(service.config, service.deps.log.child({ part: 'late-worker' }));
    try {
      const reply = await sent;
      expect(reply.status).toBe(201);
      expect(JSON.parse(reply.body)).toMatchObject({ inserted: 1, skipped: 0 });
    } finally {
      await worker.close();
    }
  });
});
