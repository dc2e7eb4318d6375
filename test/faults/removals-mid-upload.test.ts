import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validListing } from '../support/fixtures.js';
import { createFaultScenario, type FaultScenario } from '../support/fault-scenario.js';
import type { ApiProcess, ServiceProcess } from '../support/processes.js';

type Partner = Awaited<ReturnType<FaultScenario['addPartner']>>;
type Answer = { status: number; body: Record<string, unknown> };

/**
 * What a partner's slow mirror, its key's changes mid-upload and the catalogue's edges do, tried
 * through the API and worker processes an operator runs (docs/catalogue.md#mirror, decisions
 * K.6, docs/access.md#key-lifecycle): the file is a picture of the catalogue as its upload
 * began, the key must still work when the file is accepted, and no edge answers a 500 or logs a
 * secret.
 */
describe('removals and keys while a file arrives, through the processes', () => {
  let scenario: FaultScenario;
  let api: ApiProcess;
  let worker: ServiceProcess;

  beforeAll(async () => {
    scenario = await createFaultScenario({ LOG_LEVEL: 'info' });
    [api, worker] = await Promise.all([scenario.startApi(), scenario.startWorker()]);
  });
  afterAll(async () => {
    await scenario?.close();
  });

  const call = async (method: string, path: string, key: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> => {
    const res = await fetch(`${api.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
  };
  const ndjson = (rows: object[]) => rows.map((row) => `${JSON.stringify(row)}\n`).join('');
  const ids = (prefix: string, count: number) => Array.from({ length: count }, (_, n) => `${prefix}-${n}`);

  /** The account's rows of a catalogue, each as it was sent (so that sending it again changes nothing). */
  async function catalogue(partner: Partner, prefix: string, count: number): Promise<Map<string, object>> {
    const rows = new Map(ids(prefix, count).map((id) => [id, validListing({ external_id: id })] as const));
    const all = [...rows.values()];
    for (let at = 0; at < all.length; at += 200) {
      const created = await call('POST', '/v1/api/listings/bulk', partner.apiKey, { listings: all.slice(at, at + 200) });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
    }
    return rows;
  }

  /**
   * A file import whose first lines are sent, then nothing until `finish` sends the rest: the
   * upload has begun (its import is recorded `uploading`) when this returns.
   */
  async function slowUpload(partner: Partner, query: string, first: string, rest: string): Promise<{ finish(): Promise<Answer> }> {
    const url = new URL(`${api.baseUrl}/v1/api/imports?${query}`);
    const req = httpRequest(url, { method: 'POST', headers: { authorization: `Bearer ${partner.apiKey}`, 'content-type': 'application/x-ndjson' } });
    const answered = new Promise<Answer>((resolve, reject) => {
      req.on('error', reject);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> }));
        res.on('error', reject);
      });
    });
    answered.catch(() => undefined);
    req.write(first);
    await expect
      .poll(async () => (await scenario.sql`select 1 from imports where account_id = ${partner.accountId} and state = 'uploading'`).length, { timeout: 10_000, interval: 50 })
      .toBe(1);
    return {
      async finish() {
        req.end(rest);
        return answered;
      },
    };
  }

  async function completed(partner: Partner, importId: string): Promise<Record<string, unknown>> {
    let found: Answer | undefined;
    await expect
      .poll(async () => {
        found = await call('GET', `/v1/api/imports/${importId}`, partner.apiKey);
        return found.body['state'];
      }, { timeout: 30_000, interval: 100 })
      .toBe('completed');
    return found!.body;
  }

  const listingsOf = async (partner: Partner) =>
    scenario.sql<{ external_id: string; price_cents: number; archived: boolean }[]>`
      select external_id, price_cents, archived_at is not null as archived from listings where account_id = ${partner.accountId} order by external_id`;

  it('keeps every row another import created or changed while the mirror\'s file arrived, and removes only what nothing wrote since', async () => {
    const partner = await scenario.addPartner('Slow Mirror Prints');
    const rows = await catalogue(partner, 'C', 101);
    const kept = ids('C', 98);
    const lines = ndjson(kept.map((id) => rows.get(id)!));
    const half = lines.indexOf('\n', lines.length / 2) + 1;
    const upload = await slowUpload(partner, 'kind=listings&mode=mirror&missing=delete', lines.slice(0, half), lines.slice(half));

    // while the file arrives: a new row, a merge that changes C-100, and C-98 sent again as it is
    const created = await call('POST', '/v1/api/listings/bulk', partner.apiKey, { listings: [validListing({ external_id: 'NEW-1' })] });
    expect([created.status, created.body['inserted']]).toEqual([201, 1]);
    const merged = await call('POST', '/v1/api/listings/bulk?update=merge', partner.apiKey, { listings: [{ external_id: 'C-100', price_cents: 999 }] });
    expect([merged.status, merged.body['updated']]).toEqual([201, 1]);
    const same = await call('POST', '/v1/api/listings/bulk', partner.apiKey, { listings: [rows.get('C-98')] });
    expect([same.status, same.body['unchanged']]).toEqual([201, 1]);

    const accepted = await upload.finish();
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    const done = await completed(partner, (accepted.body['import'] as { id: string }).id);
    // C-98 (sent again unchanged: not newer) and C-99 (untouched) are gone; NEW-1 and C-100 stay
    expect(done['removal']).toEqual({ missing: 'delete', max_removal: 10, state: 'done', rows: 2 });
    const left = await listingsOf(partner);
    expect(left.map((row) => row.external_id).sort()).toEqual([...kept, 'C-100', 'NEW-1'].sort());
    expect(left.find((row) => row.external_id === 'C-100')?.price_cents).toBe(999);
  });

  it('holds a mirror whose file replaces the whole catalogue with new ids: the guard counts the catalogue as the upload began, not the file\'s own rows', async () => {
    const partner = await scenario.addPartner('Renamed Ids Prints');
    await catalogue(partner, 'OLD', 100);
    const res = await fetch(`${api.baseUrl}/v1/api/imports?kind=listings&mode=mirror&missing=delete`, {
      method: 'POST',
      headers: { authorization: `Bearer ${partner.apiKey}`, 'content-type': 'application/x-ndjson' },
      body: ndjson(ids('NEW', 900).map((id) => validListing({ external_id: id }))),
    });
    expect(res.status).toBe(202);
    const done = await completed(partner, ((await res.json()) as { import: { id: string } }).import.id);
    expect(done['removal']).toEqual({ missing: 'delete', max_removal: 10, state: 'held', rows: 100 });
    expect(done['rows']).toMatchObject({ inserted: 900, deleted: 0 });
    const left = await listingsOf(partner);
    expect(left.filter((row) => row.external_id.startsWith('OLD-') && !row.archived)).toHaveLength(100);
  });

  describe('a key that stops working while its file arrives gets no import', () => {
    const manage = (partner: Partner, method: string, path: string, body: unknown) =>
      call(method, `/v1/api/keys/${partner.keyId}${path}`, partner.sessionToken, body);

    it.each<[string, (partner: Partner) => Promise<void>, number, string]>([
      ['rolled with no grace', async (partner) => expect((await manage(partner, 'POST', '/roll', { expires_in_sec: 0 })).status).toBe(201), 401, 'api_key_expired'],
      [
        'rolled with a grace that ends before the file does',
        async (partner) => {
          expect((await manage(partner, 'POST', '/roll', { expires_in_sec: 1 })).status).toBe(201);
          await new Promise((resolve) => setTimeout(resolve, 1_200));
        },
        401,
        'api_key_expired',
      ],
      ['moved to other addresses', async (partner) => expect((await manage(partner, 'PATCH', '', { allowed_ips: ['203.0.113.0/24'] })).status).toBe(200), 403, 'ip_not_allowed'],
      ['revoked', async (partner) => expect((await manage(partner, 'DELETE', '', undefined)).status).toBe(200), 401, 'invalid_api_key'],
    ])('%s: the file is refused as /me is refused, and nothing of it is kept', async (_what, change, status, code) => {
      const partner = await scenario.addPartner();
      const lines = ndjson(ids('K', 4).map((id) => validListing({ external_id: id })));
      const upload = await slowUpload(partner, 'kind=listings', lines.slice(0, lines.indexOf('\n') + 1), lines.slice(lines.indexOf('\n') + 1));
      await change(partner);
      const me = await call('GET', '/v1/api/me', partner.apiKey);
      expect([me.status, me.body['code']]).toEqual([status, code]);
      const answer = await upload.finish();
      expect([answer.status, answer.body['code']], JSON.stringify(answer.body)).toEqual([status, code]);
      await expect.poll(async () => (await scenario.sql`select 1 from imports where account_id = ${partner.accountId}`).length, { timeout: 5_000 }).toBe(0);
      expect(await listingsOf(partner)).toEqual([]);
    });
  });

  it.each([
    ['updated_since=0001-01-01T00:00:00%2B14:00', 'invalid_updated_since'],
    ['updated_since=9999-12-31T23:59:59-14:00', 'invalid_updated_since'],
    ['updated_since=0001-01-01T00:00:00.001%2B00:01', 'invalid_updated_since'],
    ['limit=1e1', 'invalid_limit'],
    ['limit=0x10', 'invalid_limit'],
    ['limit=%201', 'invalid_limit'],
    ['limit=1.0', 'invalid_limit'],
  ])('answers the catalogue list ?%s with 400 %s, never a 500', async (query, code) => {
    for (const kind of ['listings', 'machines']) {
      const res = await call('GET', `/v1/api/${kind}?${query}`, scenario.apiKey);
      expect([res.status, res.body['code']], `${kind}?${query}`).toEqual([400, code]);
    }
  });

  it('answers a roll whose JSON body is null with 400, and rolls nothing', async () => {
    const partner = await scenario.addPartner();
    const res = await call('POST', `/v1/api/keys/${partner.keyId}/roll`, partner.sessionToken, 'null');
    expect([res.status, res.body['code']]).toEqual([400, 'invalid_expires_in_sec']);
    expect((await scenario.sql`select 1 from api_keys where account_id = ${partner.accountId}`).length).toBe(1);
  });

  it('writes no API key or session token to its request log, wherever a caller put one', async () => {
    const partner = await scenario.addPartner('Careless Paster');
    const before = api.output.length;
    expect((await call('GET', `/v1/api/listings/${partner.apiKey}`, partner.apiKey)).status).toBe(404);
    expect((await call('DELETE', `/v1/api/keys/${partner.sessionToken}`, partner.sessionToken)).status).toBe(414);
    const echoed = await call('GET', '/v1/api/me', partner.apiKey, undefined, { 'x-request-id': partner.apiKey });
    expect(echoed.status).toBe(200);
    await expect.poll(() => api.output.slice(before).filter((line) => line.includes('request completed')).length, { timeout: 5_000 }).toBeGreaterThanOrEqual(3);
    const logged = api.output.slice(before).join('\n');
    expect(logged).not.toContain(partner.apiKey);
    expect(logged).not.toContain(partner.sessionToken);
    expect(logged).not.toContain(partner.apiKey.slice(9));
    expect(logged).toContain('[redacted]');
    expect(worker.output.join('\n')).not.toContain(partner.apiKey);
  });
});
