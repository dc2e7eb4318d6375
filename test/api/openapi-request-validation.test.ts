import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROW_COMPONENTS, ROW_SCHEMA_EXTENSION } from '../../src/shared/api-schemas/bulk.js';
import { bearer, validListing, validMachine } from '../support/fixtures.js';
import { requestValidator, type SentRequest } from '../support/openapi-validator.js';
import { startTestService, type TestAccount, type TestService } from '../support/test-service.js';

type Validator = ReturnType<typeof requestValidator>;

/** A request of the partner path, as sent: a JSON body is given as a value and sent as its text. */
interface Send {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  url: string;
  auth?: 'key' | 'session' | 'none';
  headers?: Record<string, string>;
  /** a JSON body (sent as `application/json`), or the text of another media type (`contentType`) */
  json?: unknown;
  text?: string;
  contentType?: string;
}

/**
 * Rows each kind's batches mix with valid ones: every way a row fails its checks, and a row with
 * unknown fields, which are dropped (that row is written).
 */
const UNKNOWN_FIELDS = 'unknown fields';
const BAD_ROWS = {
  listings: [
    { name: 'wrong types', row: () => validListing({ price_cents: '1500', is_available: 'true', tags: 'dragon', title: 42 }) },
    { name: 'missing fields', row: () => ({ title: 'Only a title' }) },
    { name: UNKNOWN_FIELDS, row: () => validListing({ shoe_size: 42, nested: { deep: [1, 2] } }) },
    { name: 'text too long', row: () => validListing({ external_id: 'x'.repeat(101), photo_urls: [`https://cdn.example.test/${'p'.repeat(2_100)}`], tags: Array.from({ length: 101 }, (_, i) => `t${i}`) }) },
    { name: 'values out of their rules', row: () => validListing({ currency: 'EUR', price_cents: 12.5, category: 'spaceships', photo_urls: ['http://cdn.example.test/a.jpg'] }) },
    { name: 'an empty object', row: () => ({}) },
    { name: 'not even an object', row: () => 42 },
    { name: 'null', row: () => null },
    { name: 'an array', row: () => [validListing()] },
  ],
  machines: [
    { name: 'wrong types', row: () => validMachine({ capabilities: 'pla', is_skill_station: 'yes' }) },
    { name: 'missing fields', row: () => ({ model: 'MK4' }) },
    { name: 'text too long', row: () => validMachine({ category: 'c'.repeat(81), model: 'm'.repeat(201) }) },
    { name: 'a blank field', row: () => validMachine({ model: '\t ' }) },
    { name: 'a string', row: () => 'machine' },
  ],
} as const;

/**
 * The document describes what the service accepts: every request of the partner path the service
 * answers 2xx passes the request validation a gateway in front of it would do with the document
 * (Prism's validation mode, an API gateway's request validator): path and query parameters,
 * headers, media type and body. note: rows and entries are checked one by one by the service, a
 * failing one reported, not fatal; a gateway that refused such a batch would refuse a 201.
 */
describe('requests the service answers 2xx pass the document\'s request validation', () => {
  let service: TestService;
  let validator: Validator;
  let doc: { paths: Record<string, Record<string, unknown>> };
  let account: TestAccount;
  let key: string;
  /** the operations some request answered 2xx was held to, `METHOD /path` */
  const covered = new Set<string>();

  beforeAll(async () => {
    // note: three file imports in a row, before the workers may have ended the first
    service = await startTestService({ env: { ACCOUNT_MAX_FILE_IMPORTS: '10' } });
    doc = (await service.request({ method: 'GET', url: '/v1/openapi.json' })).json();
    validator = requestValidator(doc);
    account = await service.createAccount();
    key = await service.createKey(account, ['listings:write', 'jobs:read', 'listings:read']);
  });
  afterAll(async () => {
    await service?.close();
  });

  function sentRequest(request: Send): { inject: InjectOptions; sent: SentRequest } {
    const auth = request.auth ?? 'key';
    const body = request.json !== undefined ? JSON.stringify(request.json) : request.text;
    const contentType = request.json !== undefined ? 'application/json' : request.contentType;
    const headers = {
      ...(auth === 'key' ? bearer(key) : auth === 'session' ? bearer(account.sessionToken) : {}),
      ...(contentType === undefined ? {} : { 'content-type': contentType }),
      ...request.headers,
    };
    const inject: InjectOptions = { method: request.method, url: request.url, headers, ...(body === undefined ? {} : { payload: body }) };
    return { inject, sent: { method: request.method, url: request.url, headers, ...(body === undefined ? {} : { body }) } };
  }

  /** Sends `request`; it must be answered 2xx, and pass the document's request validation. */
  async function accepted(request: Send): Promise<LightMyRequestResponse> {
    const { inject, sent } = sentRequest(request);
    const res = await service.request(inject);
    expect(res.statusCode, `${request.method} ${request.url}: ${res.body.slice(0, 300)}`).toBeGreaterThanOrEqual(200);
    expect(res.statusCode, `${request.method} ${request.url}: ${res.body.slice(0, 300)}`).toBeLessThan(300);
    expect(validator.problemsOf(sent), `${request.method} ${request.url} answered ${res.statusCode}`).toEqual([]);
    const found = validator.operationOf(request.method.toLowerCase(), new URL(request.url, 'http://x').pathname);
    covered.add(`${request.method} ${found?.template}`);
    return res;
  }

  describe.each(['listings', 'machines'] as const)('POST /v1/api/%s/bulk', (kind) => {
    const valid = () => (kind === 'listings' ? validListing() : validMachine());
    const url = `/v1/api/${kind}/bulk`;

    it.each(BAD_ROWS[kind].map(({ name, row }) => [name, row] as const))('a batch with a row of %s beside a valid one (201)', async (name, row) => {
      const res = await accepted({ method: 'POST', url, json: { [kind]: [valid(), row(), valid()] } });
      expect(res.statusCode).toBe(201);
      expect(res.json<{ skipped: number }>().skipped).toBe(name === UNKNOWN_FIELDS ? 0 : 1);
    });

    it('a batch with every kind of bad row at once, with an Idempotency-Key, and its replay (201)', async () => {
      const body = { [kind]: [valid(), ...BAD_ROWS[kind].map(({ row }) => row())] };
      const headers = { 'idempotency-key': `req-${randomUUID()}` };
      expect((await accepted({ method: 'POST', url, headers, json: body })).statusCode).toBe(201);
      const replay = await accepted({ method: 'POST', url, headers, json: body });
      expect(replay.headers['idempotent-replayed']).toBe('true');
    });

    it('a batch whose envelope carries another field beside the array (201)', async () => {
      expect((await accepted({ method: 'POST', url, json: { [kind]: [valid()], note: 'nightly sync' } })).statusCode).toBe(201);
    });

    it('a dry run of a batch with bad rows, and dry_run=false with update=replace (200, 201)', async () => {
      expect((await accepted({ method: 'POST', url: `${url}?dry_run=true`, json: { [kind]: [valid(), BAD_ROWS[kind][1].row()] } })).statusCode).toBe(200);
      expect((await accepted({ method: 'POST', url: `${url}?dry_run=false&update=replace`, json: { [kind]: [valid()] } })).statusCode).toBe(201);
    });

    it('a merge batch: partial rows by external_id, a row without one, a whole new row (201)', async () => {
      const externalId = `SKU-${randomUUID()}`;
      expect((await accepted({ method: 'POST', url, json: { [kind]: [{ ...valid(), external_id: externalId }] } })).statusCode).toBe(201);
      const partial = kind === 'listings' ? { external_id: externalId, price_cents: 1999, color: null } : { external_id: externalId, nickname: 'Right bench' };
      const res = await accepted({
        method: 'POST',
        url: `${url}?update=merge`,
        json: { [kind]: [partial, { price_cents: 5 }, { ...valid(), external_id: `SKU-${randomUUID()}` }, 'not a row'] },
      });
      expect(res.json()).toMatchObject({ inserted: 1, updated: 1, skipped: 2 });
    });
  });

  describe.each(['listings', 'machines'] as const)('POST /v1/api/%s/bulk-archive and bulk-delete', (kind) => {
    it('entries by external_id, some malformed, unknown or repeated (200), and a dry run', async () => {
      const externalIds = [`SKU-${randomUUID()}`, `SKU-${randomUUID()}`];
      const valid = () => (kind === 'listings' ? validListing() : validMachine());
      await accepted({ method: 'POST', url: `/v1/api/${kind}/bulk`, json: { [kind]: externalIds.map((id) => ({ ...valid(), external_id: id })) } });
      const entries = [externalIds[0], 42, '', 'SKU-nobody', externalIds[0], null, { id: 1 }, 'x'.repeat(101)];
      expect((await accepted({ method: 'POST', url: `/v1/api/${kind}/bulk-archive?dry_run=true`, json: { external_ids: entries } })).statusCode).toBe(200);
      const archived = await accepted({ method: 'POST', url: `/v1/api/${kind}/bulk-archive`, headers: { 'idempotency-key': randomUUID() }, json: { external_ids: entries, note: 'x' } });
      expect(archived.json()).toMatchObject({ archived: 1 });
      const deleted = await accepted({ method: 'POST', url: `/v1/api/${kind}/bulk-delete`, json: { external_ids: [externalIds[1], 7, 'SKU-nobody'] } });
      expect(deleted.json()).toMatchObject({ deleted: 1, skipped: 2 });
    });

    it('entries by id, some not an id or not a string (200)', async () => {
      const valid = () => (kind === 'listings' ? validListing() : validMachine());
      await accepted({ method: 'POST', url: `/v1/api/${kind}/bulk`, json: { [kind]: [valid()] } });
      const [row] = await service.sql<{ id: string }[]>`select id from ${service.sql(kind)} where account_id = ${account.id} and archived_at is null order by created_at desc limit 1`;
      const res = await accepted({ method: 'POST', url: `/v1/api/${kind}/bulk-delete`, json: { ids: [row!.id.toUpperCase(), 'not-a-uuid', randomUUID(), false] } });
      expect(res.json()).toMatchObject({ deleted: 1, skipped: 3 });
    });
  });

  describe('POST /v1/api/imports (a whole file), the imports and their cancel', () => {
    let fileImportId: string;

    it('an NDJSON file with some bad lines, with an Idempotency-Key; a CSV file as a merge, a mirror (202)', async () => {
      const ndjson = [JSON.stringify(validListing({ external_id: 'FILE-1' })), '{"title": 5}', '42', JSON.stringify(validListing())].join('\n');
      const res = await accepted({ method: 'POST', url: '/v1/api/imports?kind=listings', headers: { 'idempotency-key': randomUUID() }, text: `${ndjson}\n`, contentType: 'application/x-ndjson' });
      expect(res.statusCode).toBe(202);
      fileImportId = res.json<{ import: { id: string } }>().import.id;
      const csv = 'external_id,template_id,category,manufacturer,model,capabilities\nM-1,tpl-1,fdm,Prusa,MK4,pla|petg\nM-2,,fdm,Prusa,MK4,\n';
      expect((await accepted({ method: 'POST', url: '/v1/api/imports?kind=machines&update=merge', text: csv, contentType: 'text/csv; charset=utf-8' })).statusCode).toBe(202);
      // note: max_removal=0: the guard holds the removal, so the other tests' rows stay active
      const mirror = `${JSON.stringify(validListing({ external_id: 'FILE-1' }))}\n`;
      expect((await accepted({ method: 'POST', url: '/v1/api/imports?kind=listings&mode=mirror&missing=archive&max_removal=0', text: mirror, contentType: 'application/x-ndjson' })).statusCode).toBe(202);
    });

    it('reads: the list with its query, an import, its failed rows as JSON and CSV (200)', async () => {
      const page = await accepted({ method: 'GET', url: '/v1/api/imports?limit=2' });
      const last = page.json<{ data: { id: string }[] }>().data.at(-1)!.id;
      await accepted({ method: 'GET', url: `/v1/api/imports?limit=100&starting_after=${last}` });
      await accepted({ method: 'GET', url: `/v1/api/imports/${fileImportId}` });
      await accepted({ method: 'GET', url: `/v1/api/imports/${fileImportId}/errors?limit=1&starting_after=0` });
      await accepted({ method: 'GET', url: `/v1/api/imports/${fileImportId}/errors`, headers: { accept: 'text/csv' } });
    });

    it.each([
      ['no body', {}],
      ['the body {}', { json: {} }],
      ['a body of other JSON, which it ignores', { json: { reason: 'mistake' } }],
    ] as const)('cancel with %s (200)', async (_what, body) => {
      expect((await accepted({ method: 'POST', url: `/v1/api/imports/${fileImportId}/cancel`, ...body })).statusCode).toBe(200);
    });
  });

  it('GET /v1/api/listings, /v1/api/machines, a row of each and their exports, with their query parameters (200)', async () => {
    const externalId = `SKU-${randomUUID()}`;
    await accepted({ method: 'POST', url: '/v1/api/listings/bulk', json: { listings: [validListing({ external_id: externalId })] } });
    await accepted({ method: 'POST', url: '/v1/api/machines/bulk', json: { machines: [validMachine()] } });
    for (const kind of ['listings', 'machines']) {
      const page = await accepted({ method: 'GET', url: `/v1/api/${kind}?limit=1` });
      const id = page.json<{ data: { id: string }[] }>().data[0]!.id;
      await accepted({ method: 'GET', url: `/v1/api/${kind}?limit=100&starting_after=${id}&archived=false&updated_since=${encodeURIComponent('2026-01-01T00:00:00+02:00')}` });
      await accepted({ method: 'GET', url: `/v1/api/${kind}?archived=true` });
      await accepted({ method: 'GET', url: `/v1/api/${kind}/${id}` });
      await accepted({ method: 'GET', url: `/v1/api/${kind}/export` });
      await accepted({ method: 'GET', url: `/v1/api/${kind}/export?format=csv&archived=false&updated_since=${encodeURIComponent('2026-01-01T00:00:00+02:00')}` });
    }
    await accepted({ method: 'GET', url: `/v1/api/listings?external_id=${externalId}` });
    // note: the filter is trimmed before its 100 characters are counted
    await accepted({ method: 'GET', url: `/v1/api/machines?external_id=${encodeURIComponent(`  ${'e'.repeat(100)} `)}` });
    await accepted({ method: 'GET', url: '/v1/api/me' });
    await accepted({ method: 'GET', url: '/v1/health', auth: 'none' });
  });

  it('key management: create, list with its query, change, roll (no body, {}, a grace), revoke (no body, {}) (200, 201)', async () => {
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const create = (json: object) => accepted({ method: 'POST', url: '/v1/api/keys', auth: 'session', json });
    const created = await create({ label: 'nightly sync', scopes: ['listings:write', 'jobs_read'], expires_at: expiresAt, allowed_ips: ['203.0.113.9/24', '2001:db8::1'] });
    const idOf = (res: LightMyRequestResponse) => res.json<{ metadata: { id: string } }>().metadata.id;
    // note: the label is trimmed before its 80 characters are counted
    const padded = await create({ label: `  ${'l'.repeat(80)}  `, scopes: ['listings_read', 'listings_read'] });
    const plain = await create({ label: 'plain', scopes: ['jobs:read'] });
    await accepted({ method: 'GET', url: '/v1/api/keys', auth: 'session' });
    await accepted({ method: 'GET', url: `/v1/api/keys?limit=1&status=active&starting_after=${idOf(created)}`, auth: 'session' });
    await accepted({ method: 'PATCH', url: `/v1/api/keys/${idOf(created)}`, auth: 'session', json: { label: 'renamed' } });
    await accepted({ method: 'PATCH', url: `/v1/api/keys/${idOf(created)}`, auth: 'session', json: { allowed_ips: null } });
    await accepted({ method: 'PATCH', url: `/v1/api/keys/${idOf(created)}`, auth: 'session', json: {} });
    await accepted({ method: 'POST', url: `/v1/api/keys/${idOf(created)}/roll`, auth: 'session' });
    await accepted({ method: 'POST', url: `/v1/api/keys/${idOf(padded)}/roll`, auth: 'session', json: {} });
    await accepted({ method: 'POST', url: `/v1/api/keys/${idOf(plain)}/roll`, auth: 'session', json: { expires_in_sec: 0 } });
    await accepted({ method: 'DELETE', url: `/v1/api/keys/${idOf(created)}`, auth: 'session' });
    await accepted({ method: 'DELETE', url: `/v1/api/keys/${idOf(padded)}`, auth: 'session', json: {} });
  });

  it('property: whatever the rows beside a valid one, a batch answered 201 passes the document', async () => {
    const field = fc.constantFrom('title', 'description', 'price_cents', 'currency', 'category', 'material', 'photo_urls', 'tags', 'external_id', 'template_id', 'model', 'capabilities');
    const row = fc.oneof(
      { weight: 3, arbitrary: fc.dictionary(fc.oneof(field, fc.string({ maxLength: 12 })), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 8 }) },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
    );
    const statuses: number[] = [];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('listings' as const, 'machines' as const), fc.array(row, { minLength: 1, maxLength: 6 }), fc.boolean(), async (kind, rows, merge) => {
        const valid = kind === 'listings' ? validListing({ external_id: `P-${randomUUID()}` }) : validMachine({ external_id: `P-${randomUUID()}` });
        const { inject, sent } = sentRequest({ method: 'POST', url: `/v1/api/${kind}/bulk${merge ? '?update=merge' : ''}`, json: { [kind]: [valid, ...rows] } });
        const res = await service.request(inject);
        statuses.push(res.statusCode);
        // note: a body with a `__proto__` key is refused whole (400 invalid_json), never answered 2xx
        if (res.statusCode >= 300) return;
        expect(res.statusCode, res.body.slice(0, 300)).toBe(201);
        expect(validator.problemsOf(sent)).toEqual([]);
      }),
      { numRuns: 40 },
    );
    expect(statuses.filter((status) => status === 201).length, JSON.stringify(statuses)).toBeGreaterThan(30);
  });

  it('held every documented operation to the document (the list above misses none)', () => {
    const documented = Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`));
    expect([...covered].sort()).toEqual(documented.sort());
  });
});

describe('the request validation refuses what breaks the document (it is not vacuous)', () => {
  let service: TestService;
  let doc: { paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: Record<string, unknown> }> } }>> };
  let validator: Validator;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
    doc = (await service.request({ method: 'GET', url: '/v1/openapi.json' })).json();
    validator = requestValidator(doc);
  });
  afterAll(async () => {
    await service?.close();
  });

  const auth = { authorization: 'Bearer svc_live_00000000_00000000000000000000000000000000' };
  const json = { ...auth, 'content-type': 'application/json' };
  const batch = JSON.stringify({ listings: [validListing()] });

  it.each([
    ['a bulk body that is not an object', { method: 'POST', url: '/v1/api/listings/bulk', headers: json, body: '[1]' }, 'body'],
    ['a bulk body without its array', { method: 'POST', url: '/v1/api/listings/bulk', headers: json, body: '{"machines":[{}]}' }, 'body'],
    ['a bulk body with no rows', { method: 'POST', url: '/v1/api/listings/bulk', headers: json, body: '{"listings":[]}' }, 'body'],
    ['a bulk body with 201 rows', { method: 'POST', url: '/v1/api/listings/bulk', headers: json, body: JSON.stringify({ listings: Array.from({ length: 201 }, () => ({})) }) }, 'body'],
    ['a bulk request without a body', { method: 'POST', url: '/v1/api/listings/bulk', headers: auth }, 'body: required'],
    ['a bulk body that is not JSON', { method: 'POST', url: '/v1/api/listings/bulk', headers: json, body: '{"listings":' }, 'body: not JSON'],
    ['a bulk body sent as text/plain', { method: 'POST', url: '/v1/api/listings/bulk', headers: { ...auth, 'content-type': 'text/plain' }, body: batch }, 'media type'],
    ['a dry_run of another value', { method: 'POST', url: '/v1/api/listings/bulk?dry_run=yes', headers: json, body: batch }, 'query parameter dry_run'],
    ['an update of another value', { method: 'POST', url: '/v1/api/machines/bulk?update=patch', headers: json, body: '{"machines":[{}]}' }, 'query parameter update'],
    ['an Idempotency-Key of 256 characters', { method: 'POST', url: '/v1/api/listings/bulk', headers: { ...json, 'idempotency-key': 'k'.repeat(256) }, body: batch }, 'header parameter Idempotency-Key'],
    ['no key at all', { method: 'POST', url: '/v1/api/listings/bulk', headers: { 'content-type': 'application/json' }, body: batch }, 'security'],
    ['an archive naming both arrays', { method: 'POST', url: '/v1/api/listings/bulk-archive', headers: json, body: '{"external_ids":["a"],"ids":["b"]}' }, 'body'],
    ['an archive with ids: null beside external_ids', { method: 'POST', url: '/v1/api/listings/bulk-archive', headers: json, body: '{"external_ids":["a"],"ids":null}' }, 'body'],
    ['an archive of 1001 entries', { method: 'POST', url: '/v1/api/machines/bulk-delete', headers: json, body: JSON.stringify({ ids: Array.from({ length: 1001 }, () => 'x') }) }, 'body'],
    ['a file import without its kind', { method: 'POST', url: '/v1/api/imports', headers: { ...auth, 'content-type': 'text/csv' }, body: 'a\n1\n' }, 'query parameter kind: required'],
    ['a file import of a JSON body', { method: 'POST', url: '/v1/api/imports?kind=listings', headers: json, body: '{}' }, 'media type'],
    ['a key list with a status of another value', { method: 'GET', url: '/v1/api/keys?status=gone', headers: auth }, 'query parameter status'],
    ['an import list with limit=0', { method: 'GET', url: '/v1/api/imports?limit=0', headers: auth }, 'query parameter limit'],
    ['a key id that is not a UUID', { method: 'DELETE', url: '/v1/api/keys/not-a-key', headers: auth }, 'path parameter id'],
    ['a body sent where none is declared', { method: 'GET', url: '/v1/api/me', headers: json, body: '{}' }, 'declares none'],
    ['a key without its scopes', { method: 'POST', url: '/v1/api/keys', headers: json, body: '{"label":"x"}' }, 'body'],
    ['a blank label', { method: 'POST', url: '/v1/api/keys', headers: json, body: JSON.stringify({ label: '   ', scopes: ['jobs:read'] }) }, 'body'],
    ['an external_id filter of 101 characters once trimmed', { method: 'GET', url: `/v1/api/listings?external_id=%20${'e'.repeat(101)}`, headers: auth }, 'query parameter external_id'],
    ['a label of 81 characters once trimmed', { method: 'POST', url: '/v1/api/keys', headers: json, body: JSON.stringify({ label: ` ${'l'.repeat(81)} `, scopes: ['jobs:read'] }) }, 'body'],
    ['a roll of a grace over 7 days', { method: 'POST', url: `/v1/api/keys/${randomUUID()}/roll`, headers: json, body: '{"expires_in_sec":604801}' }, 'body'],
    ['a path the document does not have', { method: 'GET', url: '/v1/api/nothing', headers: auth }, 'no operation'],
  ] as const)('refuses %s', (_what, request, problem) => {
    const problems = validator.problemsOf(request as SentRequest);
    expect(problems.length, JSON.stringify(problems)).toBeGreaterThan(0);
    expect(problems.join('\n')).toContain(problem);
  });

  it('takes the same requests once made valid (the refusals above are of what was broken)', () => {
    expect(validator.problemsOf({ method: 'POST', url: '/v1/api/listings/bulk?dry_run=true&update=merge', headers: { ...json, 'idempotency-key': 'k'.repeat(255) }, body: batch })).toEqual([]);
    expect(validator.problemsOf({ method: 'POST', url: '/v1/api/imports?kind=listings', headers: { ...auth, 'content-type': 'text/csv' }, body: 'a\n1\n' })).toEqual([]);
    expect(validator.problemsOf({ method: 'GET', url: '/v1/api/keys?status=revoked&limit=100', headers: auth })).toEqual([]);
    expect(validator.problemsOf({ method: 'DELETE', url: `/v1/api/keys/${randomUUID()}`, headers: auth })).toEqual([]);
  });

  it('would refuse, over rows typed as a valid row (the document before), the batches with bad rows the service answers 201', () => {
    const strict = structuredClone(doc);
    for (const kind of ['listings', 'machines'] as const) {
      const body = strict.paths[`/v1/api/${kind}/bulk`]!.post!.requestBody!.content['application/json']!.schema as { properties: Record<string, { items: Record<string, unknown> }> };
      const items = body.properties[kind]!.items;
      expect(items[ROW_SCHEMA_EXTENSION]).toBe(`#/components/schemas/${ROW_COMPONENTS[kind]}`);
      body.properties[kind]!.items = { $ref: items[ROW_SCHEMA_EXTENSION] };
    }
    const closed = requestValidator(strict);
    for (const kind of ['listings', 'machines'] as const) {
      const valid = kind === 'listings' ? validListing() : validMachine();
      const mixed = (row: unknown) => ({ method: 'POST', url: `/v1/api/${kind}/bulk`, headers: json, body: JSON.stringify({ [kind]: [valid, row] }) });
      expect(closed.problemsOf(mixed(valid))).toEqual([]);
      for (const { name, row } of BAD_ROWS[kind].filter(({ name }) => name !== UNKNOWN_FIELDS)) {
        expect(closed.problemsOf(mixed(row())), `${kind}: a row of ${name}`).not.toEqual([]);
        expect(validator.problemsOf(mixed(row())), `${kind}: a row of ${name}`).toEqual([]);
      }
    }
  });
});
