import { connect, type AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/api/app.js';
import { createApiDeps } from '../../src/api/deps.js';
import { setAccountTier } from '../../src/shared/repositories/accounts.js';
import { bearer, validListing, validMachine } from '../support/fixtures.js';
import { requestHead } from '../support/raw-http.js';
import { startTestService, type TestService } from '../support/test-service.js';

interface Exchange {
  /** the status of each response the server sent, in order (a 100 Continue included) */
  statuses: number[];
  /** the final response's headers and body */
  headers: Record<string, string>;
  body: string;
}

/**
 * Sends a request head asking `Expect: 100-continue` without its body, as curl does for a large
 * upload; sends `body` only once the server answered 100 Continue, and reads until the final
 * response is complete or the server closes the connection.
 */
function expectContinue(port: number, head: string, body: string): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let buffer = Buffer.alloc(0);
    const statuses: number[] = [];
    let finished = false;
    const finish = (headers: Record<string, string>, responseBody: string) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ statuses, headers, body: responseBody });
    };
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer within 10 s; statuses so far ${JSON.stringify(statuses)}, got ${JSON.stringify(buffer.toString('latin1'))}`));
    }, 10_000);
    const read = () => {
      for (;;) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end === -1) return;
        const [statusLine = '', ...lines] = buffer.subarray(0, end).toString('latin1').split('\r\n');
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1]);
        const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
        if (status === 100) {
          statuses.push(status);
          buffer = buffer.subarray(end + 4);
          socket.write(body);
          continue;
        }
        const length = Number(headers['content-length'] ?? 0);
        if (buffer.length < end + 4 + length) return;
        statuses.push(status);
        finish(headers, buffer.subarray(end + 4, end + 4 + length).toString('utf8'));
        return;
      }
    };
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      read();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (!finished) {
        clearTimeout(timer);
        reject(new Error(`closed before a complete answer; statuses ${JSON.stringify(statuses)}, got ${JSON.stringify(buffer.toString('latin1'))}`));
      }
    });
    socket.write(head);
  });
}

async function listening(app: FastifyInstance): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as AddressInfo).port;
}

const listingsBody = JSON.stringify({ listings: [validListing()] });

describe('Expect: 100-continue: a refusal instead of 100 Continue, 100 Continue only when the body is wanted', () => {
  let service: TestService;
  let port: number;
  let key: string;

  beforeAll(async () => {
    service = await startTestService({ env: { ACCOUNT_MAX_IN_FLIGHT: '1', TRUST_PROXY: 'true' } });
    port = await listening(service.app);
    key = await service.createKey(await service.createAccount());
  });
  afterAll(async () => {
    await service?.close();
  });

  const bulkHead = (headers: Record<string, string>, contentLength = Buffer.byteLength(listingsBody), target = '/v1/api/listings/bulk') =>
    requestHead('POST', target, { 'content-type': 'application/json', expect: '100-continue', ...headers }, contentLength);

  it('gives a good import 100 Continue, then, once the body has arrived, its 201', async () => {
    const exchange = await expectContinue(port, bulkHead(bearer(key)), listingsBody);
    expect(exchange.statuses).toEqual([100, 201]);
    expect(JSON.parse(exchange.body)).toEqual({ inserted: 1, skipped: 0, errors: [], import_id: expect.any(String) });
  });

  it('gives a good machines import 100 Continue, then its 201', async () => {
    const body = JSON.stringify({ machines: [validMachine()] });
    const exchange = await expectContinue(port, bulkHead(bearer(key), Buffer.byteLength(body), '/v1/api/machines/bulk'), body);
    expect(exchange.statuses).toEqual([100, 201]);
  });

  const refusals: [string, () => Promise<{ headers: Record<string, string>; contentLength?: number; target?: string }>, number, Record<string, unknown>][] = [
    [
      'a locked-out address',
      async () => {
        const ip = '203.0.113.41';
        for (let i = 0; i < 20; i += 1) await service.deps.lockout.recordFailure(ip);
        return { headers: { ...bearer(key), 'x-forwarded-for': ip } };
      },
      429,
      { error: 'Too many failed authentication attempts', code: 'locked_out' },
    ],
    ['no key', async () => ({ headers: {} }), 401, { error: 'Missing or malformed API key', code: 'missing_api_key' }],
    ['an unknown key', async () => ({ headers: bearer(`svc_live_0badc0de_${'0'.repeat(32)}`) }), 401, { error: 'Invalid API key', code: 'invalid_api_key' }],
    [
      'an account off the API tiers',
      async () => {
        const account = await service.createAccount();
        const proKey = await service.createKey(account);
        await setAccountTier(service.sql, account.id, 'pro');
        return { headers: bearer(proKey) };
      },
      402,
      { error: 'API access requires an Enterprise or Global subscription', code: 'subscription_required' },
    ],
    ['a key without the scope', async () => ({ headers: bearer(await service.createKey(await service.createAccount(), ['jobs:read'])) }), 403, { error: 'Missing required scope: listings_write', code: 'missing_scope' }],
    [
      'an account at its in-flight cap',
      async () => {
        const account = await service.createAccount();
        const capped = await service.createKey(account);
        expect(await service.deps.inFlight.tryAcquire(account.id)).toBeDefined();
        return { headers: bearer(capped) };
      },
      429,
      { error: 'Too many concurrent requests', code: 'too_many_concurrent_requests', retry_after_sec: 1 },
    ],
    ['a declared listings body over 2,097,152 bytes', async () => ({ headers: bearer(key), contentLength: 2_097_153 }), 413, { error: 'Request body too large', code: 'body_too_large', limit_bytes: 2_097_152 }],
    [
      'a declared machines body over 1,048,576 bytes',
      async () => ({ headers: bearer(key), contentLength: 1_048_577, target: '/v1/api/machines/bulk' }),
      413,
      { error: 'Request body too large', code: 'body_too_large', limit_bytes: 1_048_576 },
    ],
    ['an unknown query parameter', async () => ({ headers: bearer(key), target: '/v1/api/listings/bulk?dryRun=true' }), 400, { error: 'Unknown query parameter: dryRun', code: 'unknown_query_parameter' }],
  ];

  it.each(refusals)('answers %s with its refusal first, never 100 Continue, and closes the connection', async (_what, setUp, status, body) => {
    const { headers, contentLength, target } = await setUp();
    const exchange = await expectContinue(port, bulkHead(headers, contentLength, target), listingsBody);
    expect(exchange.statuses).toEqual([status]);
    expect(JSON.parse(exchange.body)).toMatchObject(body);
    expect(exchange.headers.connection).toBe('close');
  });

  it('still gives key management 100 Continue after its checks (POST /v1/api/keys), and refuses a bad session without it', async () => {
    const account = await service.createAccount();
    const body = JSON.stringify({ label: 'continue', scopes: ['listings:write'] });
    const head = (token: string) => requestHead('POST', '/v1/api/keys', { ...bearer(token), 'content-type': 'application/json', expect: '100-continue' }, Buffer.byteLength(body));
    const created = await expectContinue(port, head(account.sessionToken), body);
    expect(created.statuses).toEqual([100, 201]);
    expect(JSON.parse(created.body)).toMatchObject({ metadata: { label: 'continue' } });
    const refused = await expectContinue(port, head('not-a-token'), body);
    expect(refused.statuses).toEqual([401]);
  });

  it('answers a request that does not ask for it as before: no 100 Continue', async () => {
    const exchange = await expectContinue(port, `${requestHead('POST', '/v1/api/listings/bulk', { ...bearer(key), 'content-type': 'application/json' }, Buffer.byteLength(listingsBody))}${listingsBody}`, '');
    expect(exchange.statuses).toEqual([201]);
  });
});

describe('Expect: 100-continue on an overloaded process', () => {
  let service: TestService;
  let overloaded: FastifyInstance;
  let close: () => Promise<void>;
  let port: number;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
    const deps = await createApiDeps({ ...service.config, overloadHeapUsedMb: 1 }, service.deps.log.child({ replica: 'overloaded' }));
    overloaded = await buildApp(deps);
    close = async () => {
      await overloaded.close();
      await deps.close();
    };
    port = await listening(overloaded);
    // note: the first sample is taken a second after start.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
  });
  afterAll(async () => {
    await close?.();
    await service?.close();
  });

  it('answers a bulk import 503 "Service overloaded, retry shortly" instead of 100 Continue', async () => {
    const key = await service.createKey(await service.createAccount());
    const head = requestHead('POST', '/v1/api/listings/bulk', { ...bearer(key), 'content-type': 'application/json', expect: '100-continue' }, Buffer.byteLength(listingsBody));
    const exchange = await expectContinue(port, head, listingsBody);
    expect(exchange.statuses).toEqual([503]);
    expect(JSON.parse(exchange.body)).toEqual({ error: 'Service overloaded, retry shortly', code: 'overloaded', retry_after_sec: 5 });
  });
});
