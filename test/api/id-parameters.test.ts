import { randomUUID } from 'node:crypto';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newPartner } from '../support/bulk-endpoint.js';
import { bearer } from '../support/fixtures.js';
import { startTestService, type TestAccount, type TestService } from '../support/test-service.js';

const IMPORT_NOT_FOUND = { error: 'Import not found', code: 'import_not_found' };
const KEY_NOT_FOUND = { error: 'API key not found', code: 'api_key_not_found' };
const NO_SUCH_IMPORT = { error: 'starting_after: no such import', code: 'unknown_starting_after' };
const NO_SUCH_KEY = { error: 'starting_after: no such key', code: 'unknown_key_starting_after' };
const MALFORMED_URL = { error: 'Malformed request URL', code: 'malformed_url' };

/**
 * Ids no import or key can have, as a path segment or a query value, each answered as an unknown
 * id: never a 5xx (PostgreSQL raises on a NUL in text, and on anything but a UUID in a uuid column).
 */
const NO_ID: [string, string][] = [
  ['a NUL', '%00'],
  ['a NUL inside an id', `${randomUUID()}%00`],
  ['a control character (ESC)', '%1B%5B2J'],
  ['a C1 control', '%C2%9B'],
  ['a right-to-left override', '%E2%80%AE'],
  ['a character beyond ASCII', 'caf%C3%A9'],
  ['a space', 'a%20b'],
  ['a lone surrogate, as a string holds it', '\ud800'],
  ['65 characters', 'x'.repeat(65)],
  ['99 characters', 'x'.repeat(99)],
];

/** Ids the service could have issued, but no import or key of the account has. */
const UNKNOWN_ID: [string, string][] = [
  ['an unknown UUID', randomUUID()],
  ['64 printable characters', `${'x'.repeat(62)}~!`],
  ['a lone surrogate written out', '%5Cud800'],
];

/** What a partner can compare of two answers: the status, the body and which headers came. */
const shapeOf = (res: LightMyRequestResponse) => ({ status: res.statusCode, body: res.body, headers: Object.keys(res.headers).sort() });

let service: TestService;

beforeAll(async () => {
  service = await startTestService({ worker: false });
});
afterAll(async () => {
  await service?.close();
});

/** A new partner's key, and the id of one completed import of its account, recorded as from `source`. */
async function partnerWithImport(source: 'file' | 'request'): Promise<{ key: string; importId: string }> {
  const partner = await newPartner(service);
  const importId = randomUUID();
  await service.sql`
    insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, source, created_at)
    values (${importId}, ${partner.account.id}, 'listings', 'id-parameters', 0, 0, 0, '[]', 'completed', ${source}, now())`;
  return { key: partner.key, importId };
}

describe('GET /v1/api/imports/{id}, /errors and POST /cancel with an id no import can have', () => {
  let key: string;
  let importId: string;

  beforeAll(async () => {
    ({ key, importId } = await partnerWithImport('file'));
  });

  const routes: [string, (id: string) => InjectOptions][] = [
    ['GET /v1/api/imports/{id}', (id) => ({ method: 'GET', url: `/v1/api/imports/${id}` })],
    ['GET /v1/api/imports/{id}/errors', (id) => ({ method: 'GET', url: `/v1/api/imports/${id}/errors` })],
    ['GET /v1/api/imports/{id}/errors?limit=5', (id) => ({ method: 'GET', url: `/v1/api/imports/${id}/errors?limit=5` })],
    ['POST /v1/api/imports/{id}/cancel', (id) => ({ method: 'POST', url: `/v1/api/imports/${id}/cancel` })],
  ];
  const send = (request: InjectOptions) => service.request({ ...request, headers: bearer(key) });

  describe.each(routes)('%s', (_route, request) => {
    it.each([...NO_ID, ...UNKNOWN_ID])('answers %s 404 "Import not found", as an unknown id', async (_what, id) => {
      const unknown = await send(request(randomUUID()));
      const res = await send(request(id));
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual(IMPORT_NOT_FOUND);
      expect(shapeOf(res)).toEqual(shapeOf(unknown));
    });

    it('answers the account\'s import 200, as before', async () => {
      const res = await send(request(importId));
      expect(res.statusCode).toBe(200);
    });

    it.each([
      ['a lone surrogate', '%ED%A0%80'],
      ['a byte that is not UTF-8', '%FF'],
    ])('answers a path with %s, which the router cannot decode, 400 "Malformed request URL"', async (_what, id) => {
      const res = await send(request(id));
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual(MALFORMED_URL);
    });

    it('answers an id of more than 100 characters 414 before the route, as before', async () => {
      expect((await send(request('x'.repeat(101)))).statusCode).toBe(414);
    });
  });

  it('logs the id a partner sent escaped, never a control character of it', async () => {
    await send({ method: 'GET', url: '/v1/api/imports/a%E2%80%AEb%C2%9B%00' });
    const line = service.logs.findLast((entry) => entry['url'] === '/v1/api/imports/a%E2%80%AEb%C2%9B%00');
    expect(line).toMatchObject({ statusCode: 404, code: 'import_not_found', importId: 'a\\u202eb\\u009b\\u0000' });
    // eslint-disable-next-line no-control-regex -- control characters are what must not be logged
    expect(service.rawLogs()).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
  });
});

describe('GET /v1/api/imports?starting_after= with an id no import can have', () => {
  let key: string;
  let importId: string;

  beforeAll(async () => {
    ({ key, importId } = await partnerWithImport('request'));
  });
  const list = (query: string) => service.request({ method: 'GET', url: `/v1/api/imports?${query}`, headers: bearer(key) });

  it.each([...NO_ID, ...UNKNOWN_ID, ['a lone surrogate', '%ED%A0%80'], ['an empty one', ''], ['10,000 characters', 'x'.repeat(10_000)]])(
    'answers %s 400 "starting_after: no such import"',
    async (_what, id) => {
      const res = await list(`starting_after=${id}`);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual(NO_SUCH_IMPORT);
    },
  );

  it('pages after the account\'s import, as before', async () => {
    const res = await list(`starting_after=${importId}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ data: [], has_more: false });
  });
});

describe('DELETE /v1/api/keys/{id} and GET /v1/api/keys?starting_after= with an id no key can have', () => {
  let account: TestAccount;
  let keyId: string;

  beforeAll(async () => {
    account = await service.createAccount();
    const created = await service.request({ method: 'POST', url: '/v1/api/keys', headers: bearer(account.sessionToken), payload: { label: 'k', scopes: ['jobs:read'] } });
    expect(created.statusCode).toBe(201);
    keyId = created.json<{ metadata: { id: string } }>().metadata.id;
  });
  const revoke = (id: string) => service.request({ method: 'DELETE', url: `/v1/api/keys/${id}`, headers: bearer(account.sessionToken) });
  const list = (query: string) => service.request({ method: 'GET', url: `/v1/api/keys?${query}`, headers: bearer(account.sessionToken) });

  it.each([...NO_ID, ...UNKNOWN_ID, ['a UUID with a NUL in it', `${randomUUID().slice(0, 35)}%00`]])(
    'answers DELETE with %s 404 "API key not found", as an unknown key, and revokes nothing',
    async (_what, id) => {
      const unknown = await revoke(randomUUID());
      const res = await revoke(id);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual(KEY_NOT_FOUND);
      expect(shapeOf(res)).toEqual(shapeOf(unknown));
      expect((await list('')).json<{ keys: { is_revoked: boolean }[] }>().keys.map((k) => k.is_revoked)).toEqual([false]);
    },
  );

  it('answers DELETE with a path the router cannot decode 400 "Malformed request URL"', async () => {
    const res = await revoke('%ED%A0%80');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(MALFORMED_URL);
  });

  it.each([...NO_ID, ...UNKNOWN_ID, ['a lone surrogate', '%ED%A0%80'], ['an empty one', '']])('answers the list with %s 400 "starting_after: no such key"', async (_what, id) => {
    const res = await list(`starting_after=${id}`);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(NO_SUCH_KEY);
  });

  it('pages after the account\'s key, and revokes it, as before', async () => {
    const page = await list(`starting_after=${keyId}`);
    expect(page.statusCode).toBe(200);
    expect(page.json()).toEqual({ keys: [], has_more: false });
    const res = await revoke(keyId.toUpperCase());
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ revoked: { id: keyId, is_revoked: true } });
  });
});
