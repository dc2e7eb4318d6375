import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, validListing } from '../support/fixtures.js';
import { holdImports, waitForHeldImports } from '../support/hold-imports.js';
import { requestHead } from '../support/raw-http.js';
import { startTestService, type TestService } from '../support/test-service.js';

const SHUTTING_DOWN = { error: 'Service temporarily unavailable', code: 'service_unavailable', retry_after_sec: 5 };

interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

function parse(text: string): Reply {
  const split = text.indexOf('\r\n\r\n');
  const [statusLine = '', ...lines] = text.slice(0, split).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1]), headers, body: text.slice(split + 4) };
}

/**
 * A connection whose request has begun (its first bytes are with the server, so the connection is
 * not idle and survives the start of close()) and is finished later: a request that arrives while
 * the API is closing. `finish` sends the rest and reads until the server closes the connection.
 */
async function begunRequest(port: number, text: string, sentBeforeClose = 10): Promise<{ finish(rest?: string): Promise<Reply> }> {
  const socket: Socket = connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  const closed = new Promise<void>((resolve) => {
    socket.on('close', () => resolve());
    socket.on('error', () => resolve());
  });
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  socket.write(text.slice(0, sentBeforeClose));
  return {
    async finish(rest = text.slice(sentBeforeClose)) {
      socket.write(rest);
      const timer = setTimeout(() => socket.destroy(), 10_000);
      await closed;
      clearTimeout(timer);
      return parse(Buffer.concat(chunks).toString('utf8'));
    },
  };
}

describe('a request that arrives while the API is closing', () => {
  let service: TestService;
  let port: number;
  let closed: Promise<void> | undefined;

  beforeAll(async () => {
    service = await startTestService();
    await service.app.listen({ port: 0, host: '127.0.0.1' });
    port = (service.app.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    // note: the test closes the app itself; closing it again is a no-op.
    await closed;
    await service?.close();
  });

  it('gets the catalogue\'s 503 service_unavailable with Retry-After and Connection: close, while the import in flight finishes', async () => {
    const account = await service.createAccount();
    const key = await service.createKey(account);
    const hold = await holdImports(service.sql);
    let held: Promise<Response> | undefined;
    let released = false;
    try {
      // An import in flight: its job waits in the worker, held at its insert.
      held = fetch(`http://127.0.0.1:${port}/v1/api/listings/bulk`, {
        method: 'POST',
        headers: { ...bearer(key), 'content-type': 'application/json' },
        body: JSON.stringify({ listings: [validListing(), validListing()] }),
      });
      await waitForHeldImports(service.sql, 1);

      // Requests whose first bytes are in before close() begins and the rest after.
      const body = JSON.stringify({ listings: [validListing()] });
      const me = await begunRequest(port, requestHead('GET', '/v1/api/me', bearer(key)));
      const health = await begunRequest(port, requestHead('GET', '/v1/health'));
      const bulk = await begunRequest(port, requestHead('POST', '/v1/api/listings/bulk', { ...bearer(key), 'content-type': 'application/json' }, Buffer.byteLength(body)));
      const unknown = await begunRequest(port, requestHead('GET', '/v1/api/nowhere'));
      // note: the server has read those first bytes once a request sent after them is answered.
      expect((await fetch(`http://127.0.0.1:${port}/v1/health`)).status).toBe(200);

      closed = service.app.close();
      // The listener stops accepting once the preClose hooks have run.
      await expect.poll(() => service.app.server.listening, { timeout: 5_000, interval: 10 }).toBe(false);

      // The bulk import's head arrives, not its body: refused before the body is read.
      const replies = await Promise.all([me.finish(), health.finish(), bulk.finish(), unknown.finish()]);
      for (const reply of replies) {
        expect(reply.status).toBe(503);
        expect(JSON.parse(reply.body)).toEqual(SHUTTING_DOWN);
        expect(reply.headers).toMatchObject({ 'retry-after': '5', connection: 'close', 'content-type': 'application/json; charset=utf-8' });
        expect(reply.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      }

      await hold.release();
      released = true;
      const done = await held;
      expect(done.status).toBe(201);
      expect(done.headers.get('connection')).toBe('close');
      expect(await done.json()).toMatchObject({ inserted: 2, skipped: 0 });
    } finally {
      if (!released) await hold.release();
    }
    await closed;

    // Nothing of the refused import was written; each refusal has its line with its code (the
    // health check's 503 is a probe's, written at debug: docs/operators.md#logs).
    const [{ count } = { count: -1 }] = await service.sql<{ count: number }[]>`select count(*)::int as count from listings where account_id = ${account.id}`;
    expect(count).toBe(2);
    const refusals = service.logs.filter((line) => line['msg'] === 'request completed' && line['statusCode'] === 503);
    // note: at info, not error: the stop doing its job
    expect(refusals.map((line) => line['level'])).toEqual([30, 30, 30]);
    expect(refusals.map((line) => [line['url'], line['code']]).sort()).toEqual(
      [
        ['/v1/api/listings/bulk', 'service_unavailable'],
        ['/v1/api/me', 'service_unavailable'],
        ['/v1/api/nowhere', 'service_unavailable'],
      ].sort(),
    );
  });
});
