import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError, createClient, NetworkError, ReplyError, type RetryEvent, type RowInputs } from '@bulk-import/client';

const ROW: RowInputs['machines'] = { template_id: 'tpl-1', category: 'fdm', manufacturer: 'Prusa Research', model: 'MK4' };
const CREATED = { inserted: 1, skipped: 0, errors: [], import_id: '0b6f2c1e-0000-4000-8000-000000000001' };

/**
 * What the package guarantees below the API's contract, against servers that misbehave: it never
 * follows a redirect, never reads past its bound, tells a request that never left from one that
 * may have arrived, and sends one Idempotency-Key on every attempt of an import.
 */
describe('@bulk-import/client transport', () => {
  const servers: ReturnType<typeof createServer>[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
  });

  async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
    const server = createServer(handler);
    servers.push(server);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  const clientOf = (baseUrl: string, retries: RetryEvent[] = []) =>
    createClient({ baseUrl, apiKey: 'svc_live_0123abcd_0123456789abcdef0123456789abcdef', retry: { sleep: async () => {}, onRetry: (event) => void retries.push(event) } });

  it('a connection never made is a NetworkError whose outcome is not-delivered, after the attempts', async () => {
    const closed = await serve(() => {});
    servers[0]!.close();
    const retries: RetryEvent[] = [];
    const error = await clientOf(closed, retries).me().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ outcome: 'not-delivered', attempts: 5 });
    expect(retries).toHaveLength(4);
  });

  it('a connection dropped after the request is retried with the same Idempotency-Key; out of attempts, the outcome is unknown', async () => {
    const keys: (string | undefined)[] = [];
    const base = await serve((req) => {
      keys.push(req.headers['idempotency-key'] as string | undefined);
      req.resume();
      req.on('end', () => req.socket.destroy());
    });
    const error = await clientOf(base).importRows('machines', [ROW]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ outcome: 'unknown', attempts: 5 });
    expect(keys).toHaveLength(5);
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('a 500 followed by connections never made is a NetworkError whose outcome is unknown: the 500 came from a server that read the request', async () => {
    let answered = 0;
    const base = await serve((req, res) => {
      answered += 1;
      req.resume();
      res.writeHead(500, { 'content-type': 'application/json', connection: 'close' });
      res.end(JSON.stringify({ error: 'Internal server error' }));
      servers[0]!.close();
    });
    const error = await clientOf(base).importRows('machines', [ROW]).catch((caught: unknown) => caught);
    expect(answered).toBe(1);
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ outcome: 'unknown', attempts: 5 });
  });

  it('a 503 is waited out (Retry-After) and sent again with the same key; the User-Agent is the package\'s', async () => {
    const seen: { key: string | undefined; agent: string | undefined }[] = [];
    const base = await serve((req, res) => {
      seen.push({ key: req.headers['idempotency-key'] as string | undefined, agent: req.headers['user-agent'] });
      const busy = seen.length === 1;
      res.writeHead(busy ? 503 : 201, { 'content-type': 'application/json', ...(busy ? { 'retry-after': '2' } : { location: `/v1/api/imports/${CREATED.import_id}` }) });
      res.end(JSON.stringify(busy ? { error: 'Service unavailable', code: 'unavailable' } : CREATED));
    });
    const retries: RetryEvent[] = [];
    const result = await clientOf(base, retries).importRows('machines', [ROW]);
    expect(result).toMatchObject({ location: `/v1/api/imports/${CREATED.import_id}`, replayed: false, body: { inserted: 1 } });
    expect(retries).toEqual([expect.objectContaining({ attempt: 1, status: 503, delayMs: 2_000 })]);
    expect(seen[0]!.key).toBe(seen[1]!.key);
    expect(seen[0]!.agent).toMatch(/^bulk-import-client\/\d+\.\d+\.\d+/);
  });

  it('a redirect is an ApiError with its Location, never followed', async () => {
    let followed = false;
    const elsewhere = await serve(() => {
      followed = true;
    });
    const base = await serve((_req, res) => {
      res.writeHead(307, { location: `${elsewhere}/v1/api/listings/bulk` });
      res.end();
    });
    const error = await clientOf(base).importRows('machines', [ROW]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(307);
    expect((error as ApiError).headers.get('location')).toBe(`${elsewhere}/v1/api/listings/bulk`);
    expect(followed).toBe(false);
  });

  it('paces by the rate-limit headers: once an answer says the minute quota is used up, the next call waits for the next window', async () => {
    let remaining = 2;
    const base = await serve((_req, res) => {
      remaining -= 1;
      res.writeHead(200, { 'content-type': 'application/json', 'x-ratelimit-limit-minute': '2', 'x-ratelimit-remaining-minute': String(remaining) });
      res.end(JSON.stringify({ id: 'account' }));
    });
    let clock = 1_000_000;
    const waits: number[] = [];
    const client = createClient({ baseUrl: base, apiKey: 'svc_live_0123abcd_0123456789abcdef0123456789abcdef', retry: { now: () => clock, sleep: async (ms) => void waits.push(ms) } });
    await client.me();
    clock += 10_000;
    await client.me();
    expect(waits).toEqual([]);
    await client.me();
    // note: the window opened with the first call and ends a minute later, plus a second's margin
    expect(waits).toEqual([51_000]);
  });

  it('a server that ignores the page cursor is a ReplyError, not an endless list', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ data: [{ id: 'i-1' }, { id: 'i-2' }], has_more: true }));
    });
    const seen: string[] = [];
    const reading = (async () => {
      for await (const found of clientOf(base).listImports()) seen.push(found.id);
    })();
    await expect(reading).rejects.toBeInstanceOf(ReplyError);
    expect(seen).toEqual(['i-1', 'i-2', 'i-1', 'i-2']);
  });

  it('an answer past maxReplyBytes is abandoned unread: a ReplyError', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ...CREATED, padding: 'x'.repeat(4_096) }));
    });
    const client = createClient({ baseUrl: base, apiKey: 'svc_live_0123abcd_0123456789abcdef0123456789abcdef', maxReplyBytes: 1_024 });
    await expect(client.importRows('machines', [ROW])).rejects.toBeInstanceOf(ReplyError);
  });
});
