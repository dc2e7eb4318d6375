import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, validListing, validMachine } from '../support/fixtures.js';
import { documentValidator } from '../support/openapi-validator.js';
import { startTestService, type TestService } from '../support/test-service.js';

interface Media {
  schema: object;
  examples?: Record<string, { value: { error?: string; code?: string } }>;
}
interface Operation {
  responses: Record<string, { headers?: Record<string, unknown>; content?: Record<string, Media> }>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
}

const pointer = (...parts: string[]) => `#/${parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;

/** A request to send, with the operation of the document it is held to. */
interface Probe {
  name: string;
  path: string;
  method: 'get' | 'post' | 'patch' | 'delete';
  request: InjectOptions;
  /** the status it must get: a refusal the route is known to send */
  status: number;
}

/** What every request an operation can take is made of: a valid one, by method and URL. */
interface Valid {
  path: string;
  method: 'get' | 'post' | 'delete';
  url: string;
  auth: 'key' | 'session' | 'none';
  /** a valid body, for the operations that take one */
  payload?: object | string;
  /** its media type, when not JSON */
  contentType?: string;
  /** the query parameters it takes: an unknown one is refused (400) when it takes any check at all */
  refusesUnknownQuery: boolean;
}

const UNKNOWN_QUERY = 'bogus_param=1';

/** The response headers the document declares where they are sent (openapi.test.ts holds the same list). */
const DOCUMENTED_HEADERS = [
  'x-request-id', 'x-ratelimit-limit-minute', 'x-ratelimit-remaining-minute', 'x-ratelimit-limit-day', 'x-ratelimit-remaining-day',
  'ratelimit-policy', 'ratelimit', 'retry-after', 'idempotent-replayed',
];

/**
 * Every answer an operation gives to a bad request is in the document: its status is one the
 * operation lists, its body matches that status's schema, and its code is in that status's enum
 * with the text the examples pair with it. note: the document's list of statuses is what a
 * generated client switches on; an undocumented 400 reaches it as an unknown response.
 */
describe('the refusals each operation sends are the ones its document lists', () => {
  let service: TestService;
  let doc: Document;
  let ajv: Ajv2020;
  let key: string;
  let session: string;
  let importId: string;
  let keyId: string;
  let listingId: string;
  let machineId: string;

  beforeAll(async () => {
    service = await startTestService();
    doc = (await service.request({ method: 'GET', url: '/v1/openapi.json' })).json();
    ajv = documentValidator(doc);
    const account = await service.createAccount();
    key = await service.createKey(account, ['listings:write', 'jobs:read']);
    session = account.sessionToken;
    const created = await service.request({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(key), payload: { listings: [validListing()] } });
    expect(created.statusCode).toBe(201);
    importId = (created.json() as { import_id: string }).import_id;
    const other = await service.request({ method: 'POST', url: '/v1/api/keys', headers: bearer(session), payload: { label: 'to revoke', scopes: ['jobs:read'] } });
    expect(other.statusCode).toBe(201);
    keyId = (other.json() as { metadata: { id: string } }).metadata.id;
    expect((await service.request({ method: 'POST', url: '/v1/api/machines/bulk', headers: bearer(key), payload: { machines: [validMachine()] } })).statusCode).toBe(201);
    listingId = (await service.sql<{ id: string }[]>`select id from listings where account_id = ${account.id} limit 1`)[0]!.id;
    machineId = (await service.sql<{ id: string }[]>`select id from machines where account_id = ${account.id} limit 1`)[0]!.id;
  });
  afterAll(async () => {
    await service?.close();
  });

  const valid = (): Valid[] => [
    { path: '/v1/health', method: 'get', url: '/v1/health', auth: 'none', refusesUnknownQuery: false },
    { path: '/v1/api/me', method: 'get', url: '/v1/api/me', auth: 'key', refusesUnknownQuery: false },
    { path: '/v1/api/listings/bulk', method: 'post', url: '/v1/api/listings/bulk', auth: 'key', payload: { listings: [validListing()] }, refusesUnknownQuery: true },
    { path: '/v1/api/machines/bulk', method: 'post', url: '/v1/api/machines/bulk', auth: 'key', payload: { machines: [validMachine()] }, refusesUnknownQuery: true },
    ...(['listings', 'machines'] as const).flatMap((kind) =>
      (['archive', 'delete'] as const).map((action): Valid => {
        const path = `/v1/api/${kind}/bulk-${action}`;
        return { path, method: 'post', url: path, auth: 'key', payload: { external_ids: ['SKU-PROBE'] }, refusesUnknownQuery: true };
      }),
    ),
    { path: '/v1/api/imports', method: 'get', url: '/v1/api/imports', auth: 'key', refusesUnknownQuery: true },
    {
      path: '/v1/api/imports',
      method: 'post',
      url: '/v1/api/imports?kind=listings',
      auth: 'key',
      payload: `${JSON.stringify(validListing())}\n`,
      contentType: 'application/x-ndjson',
      refusesUnknownQuery: true,
    },
    { path: '/v1/api/imports/{id}', method: 'get', url: `/v1/api/imports/${importId}`, auth: 'key', refusesUnknownQuery: true },
    { path: '/v1/api/imports/{id}/errors', method: 'get', url: `/v1/api/imports/${importId}/errors`, auth: 'key', refusesUnknownQuery: true },
    { path: '/v1/api/imports/{id}/cancel', method: 'post', url: `/v1/api/imports/${importId}/cancel`, auth: 'key', refusesUnknownQuery: true },
    { path: '/v1/api/listings', method: 'get', url: '/v1/api/listings', auth: 'key', refusesUnknownQuery: true },
    { path: '/v1/api/listings/{id}', method: 'get', url: `/v1/api/listings/${listingId}`, auth: 'key', refusesUnknownQuery: true },
    { path: '/v1/api/machines', method: 'get', url: '/v1/api/machines', auth: 'key', refusesUnknownQuery: true },
    { path: '/v1/api/machines/{id}', method: 'get', url: `/v1/api/machines/${machineId}`, auth: 'key', refusesUnknownQuery: true },
    { path: '/v1/api/keys', method: 'get', url: '/v1/api/keys', auth: 'session', refusesUnknownQuery: true },
    { path: '/v1/api/keys', method: 'post', url: '/v1/api/keys', auth: 'session', payload: { label: 'probe', scopes: ['jobs:read'] }, refusesUnknownQuery: false },
    { path: '/v1/api/keys/{id}', method: 'delete', url: `/v1/api/keys/${keyId}`, auth: 'session', refusesUnknownQuery: false },
  ];

  const headersOf = (op: Valid): Record<string, string> => (op.auth === 'key' ? bearer(key) : op.auth === 'session' ? bearer(session) : {});

  function probes(): Probe[] {
    return valid().flatMap((op) => {
      const base = { path: op.path, method: op.method };
      const headers = { ...headersOf(op), ...(op.contentType === undefined ? {} : { 'content-type': op.contentType }) };
      const request = (extra: Partial<InjectOptions>): InjectOptions => ({
        method: op.method.toUpperCase() as InjectOptions['method'],
        url: op.url,
        headers,
        ...(op.payload === undefined ? {} : { payload: op.payload }),
        ...extra,
      });
      const withQuery = `${op.url}${op.url.includes('?') ? '&' : '?'}${UNKNOWN_QUERY}`;
      const succeeds = op.method === 'get' || op.path.endsWith('/cancel') || /\/bulk-(archive|delete)$/.test(op.path) ? 200 : op.path === '/v1/api/imports' ? 202 : op.method === 'post' ? 201 : 200;
      const list: Probe[] = [{ ...base, name: 'an unknown query parameter', request: request({ url: withQuery }), status: op.refusesUnknownQuery ? 400 : succeeds }];
      const json = { ...headersOf(op), 'content-type': 'application/json' };
      if (op.method === 'get') {
        // note: a GET's body is not read, whatever it holds.
        list.push({ ...base, name: 'a body that is not JSON', request: request({ headers: json, payload: '{"no' }), status: succeeds });
      } else if (op.contentType === undefined) {
        list.push(
          { ...base, name: 'a body that is not JSON', request: request({ headers: json, payload: '{"no' }), status: 400 },
          { ...base, name: 'a body of another media type', request: request({ headers: { ...headersOf(op), 'content-type': 'application/xml' }, payload: '<a/>' }), status: 415 },
          { ...base, name: 'a body over the limit', request: request({ headers: json, payload: `"${'x'.repeat(2_200_000)}"` }), status: 413 },
        );
      } else {
        list.push({ ...base, name: 'a body of another media type', request: request({ headers: json, payload: '{}' }), status: 415 });
      }
      if (op.path.includes('{id}')) {
        const withId = (id: string) => op.url.replace(/\/(?:imports|keys|listings|machines)\/[^/]+/, (m) => `${m.slice(0, m.lastIndexOf('/'))}/${id}`);
        list.push(
          { ...base, name: 'an unknown id', request: request({ url: withId('unknown-id') }), status: 404 },
          { ...base, name: 'an id no import or key can have (a NUL)', request: request({ url: withId('%00') }), status: 404 },
          // note: over Fastify's maxParamLength, answered by the router before the route (framework-errors.ts)
          { ...base, name: 'an id of 101 characters', request: request({ url: withId('x'.repeat(101)) }), status: 414 },
        );
      }
      if (op.method === 'get' && ['/v1/api/imports', '/v1/api/keys', '/v1/api/listings', '/v1/api/machines'].includes(op.path)) {
        list.push({ ...base, name: 'a starting_after no import or key can have (a NUL)', request: request({ url: `${op.url}?starting_after=%00` }), status: 400 });
      }
      return list;
    });
  }

  /** Each probe's answer held to the document; what does not hold, one line each. */
  async function problemsOf(list: readonly Probe[]): Promise<string[]> {
    const problems: string[] = [];
    for (const probe of list) {
      const res: LightMyRequestResponse = await service.request(probe.request);
      const label = `${probe.method.toUpperCase()} ${probe.path} with ${probe.name}: ${res.statusCode} ${res.body.slice(0, 200)}`;
      if (res.statusCode !== probe.status) problems.push(`${label}: expected ${probe.status}`);
      const response = doc.paths[probe.path]?.[probe.method]?.responses[String(res.statusCode)];
      if (response === undefined) {
        problems.push(`${label}: status not documented`);
        continue;
      }
      const declared = Object.keys(response.headers ?? {}).map((name) => name.toLowerCase());
      for (const name of DOCUMENTED_HEADERS.filter((h) => res.headers[h] !== undefined && !declared.includes(h))) problems.push(`${label}: sends ${name}, not declared`);
      if (res.statusCode < 400) continue;
      const validate = ajv.compile({ $ref: `openapi${pointer('paths', probe.path, probe.method, 'responses', String(res.statusCode), 'content', 'application/json', 'schema')}` });
      if (!validate(res.json())) problems.push(`${label}: body does not match: ${JSON.stringify(validate.errors)}`);
      const sent = res.json() as { error: string; code: string };
      const shown = Object.values(response.content?.['application/json']?.examples ?? {}).map((e) => e.value);
      // note: by code, not text: a text that names a value (the parameter, say) differs from its example's.
      if (!shown.some((e) => e.code === sent.code)) problems.push(`${label}: code ${sent.code} not among the examples`);
    }
    return problems;
  }

  it('sends only documented statuses, headers, bodies and codes to bad requests', async () => {
    const list = probes();
    expect(list.length).toBeGreaterThan(30);
    // note: every operation with a path parameter is sent one over the router's length
    expect(list.filter((probe) => probe.status === 414).map((probe) => `${probe.method} ${probe.path}`)).toEqual(
      valid().filter((op) => op.path.includes('{id}')).map((op) => `${op.method} ${op.path}`),
    );
    expect(await problemsOf(list)).toEqual([]);
  });

  it('answers a key roll and a key change with an id of 101 characters 414, as documented', async () => {
    const id = 'x'.repeat(101);
    const headers = { ...bearer(session), 'content-type': 'application/json' };
    const list: Probe[] = [
      { name: 'an id of 101 characters', path: '/v1/api/keys/{id}/roll', method: 'post', request: { method: 'POST', url: `/v1/api/keys/${id}/roll`, headers, payload: '{}' }, status: 414 },
      { name: 'an id of 101 characters', path: '/v1/api/keys/{id}', method: 'patch', request: { method: 'PATCH', url: `/v1/api/keys/${id}`, headers, payload: '{"label":"x"}' }, status: 414 },
    ];
    expect(await problemsOf(list)).toEqual([]);
  });

  it('documents 414 on every operation with a path parameter, and on no other', () => {
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) expect(Object.keys(operation.responses).includes('414'), `${method} ${path}`).toBe(path.includes('{'));
    }
  });
});
