import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changelogSection } from '../../src/api/openapi/document.js';
import { SERVICE_VERSION } from '../../src/api/version.js';
import { setAccountTier } from '../../src/shared/repositories/accounts.js';
import { bearer, validListing, validMachine } from '../support/fixtures.js';
import { redoclyLint } from '../support/redocly-lint.js';
import { ROW_ERROR_CODE_MEANINGS, ROW_ERROR_CODES } from '../../src/shared/rows/row-error-codes.js';
import { API_ERROR_CODES } from '../../src/shared/errors/api-errors.js';
import { MERGE_ROW_COMPONENTS, MERGE_ROW_SCHEMA_EXTENSION, ROW_COMPONENTS, ROW_SCHEMA_EXTENSION } from '../../src/shared/api-schemas/bulk.js';
import { MERGE_RULES, validateMergeRow } from '../../src/shared/rows/merge-row.js';
import { documentValidator } from '../support/openapi-validator.js';
import { startTestService, type TestService } from '../support/test-service.js';

const CHANGELOG = readFileSync(new URL('../../CHANGELOG.md', import.meta.url), 'utf8');
const METHODS = ['get', 'post', 'delete', 'put', 'patch'] as const;

interface Media {
  schema: object;
  examples?: Record<string, { summary: string; value: unknown }>;
}
interface Response {
  description: string;
  headers?: Record<string, { $ref: string }>;
  content?: Record<string, Media>;
}
interface Operation {
  security?: Record<string, string[]>[];
  parameters?: { in: string; name: string; required?: boolean; schema: object; example?: unknown }[];
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, Response>;
}
interface Document {
  openapi: string;
  info: { version: string; description: string };
  paths: Record<string, Partial<Record<(typeof METHODS)[number], Operation>>>;
  components: { securitySchemes: Record<string, Record<string, string>>; headers: Record<string, object> };
}

/** JSON pointer of a key path in the document. */
const pointer = (...parts: string[]) => `#/${parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;

function operations(doc: Document) {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.flatMap((method) => (item[method] === undefined ? [] : [{ path, method, operation: item[method] }])),
  );
}

/** Every route of the running app, from Fastify's own route tree: `{method, path}`. */
function registeredRoutes(printed: string): { method: string; path: string }[] {
  const routes: { method: string; path: string }[] = [];
  const stack: string[] = [];
  for (const line of printed.split('\n')) {
    const match = /^(.*?)[├└]── (.*?)(?: \(([^)]*)\))?$/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    stack.length = depth;
    const path = (stack[depth - 1] ?? '') + match[2]!;
    stack.push(path);
    for (const method of (match[3] ?? '').split(',').map((m) => m.trim()).filter(Boolean)) routes.push({ method, path });
  }
  return routes;
}

const toOpenapiPath = (path: string) => path.replace(/:(\w+)/g, '{$1}');

describe('GET /v1/openapi.json', () => {
  let service: TestService;
  let doc: Document;
  let ajv: Ajv2020;

  beforeAll(async () => {
    // note: with operator endpoints mounted, so that the document is shown to leave them out.
    service = await startTestService({ env: { ADMIN_USER: 'operator', ADMIN_PASSWORD: 'operator-password-123' } });
    const res = await service.request({ method: 'GET', url: '/v1/openapi.json' });
    expect(res.statusCode).toBe(200);
    doc = res.json();
    ajv = documentValidator(doc);
  });
  afterAll(async () => {
    await service?.close();
  });

  function validates(ref: string, value: unknown): { valid: boolean; errors: unknown } {
    const validate = ajv.compile({ $ref: `openapi${ref}` });
    const valid = validate(value);
    return { valid, errors: validate.errors };
  }

  it('is a valid OpenAPI 3.1 document for @seriousme/openapi-schema-validator', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc) as unknown as Record<string, unknown>);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
    expect(doc.openapi).toBe('3.1.0');
  });

  it('is refused by the same validator once broken (the check is not vacuous)', async () => {
    const broken = structuredClone(doc);
    broken.paths['/v1/api/me']!.get!.responses['200']!.description = 42 as unknown as string;
    expect((await new Validator().validate(broken as unknown as Record<string, unknown>)).valid).toBe(false);
  });

  it('passes redocly lint (recommended rules) with no error and no warning', async () => {
    const problems = await redoclyLint(doc);
    expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message}`)).toEqual([]);
  }, 60_000);

  it('is faulted by redocly lint once it lacks servers or holds an invalid example (the check is not vacuous)', async () => {
    const broken = structuredClone(doc) as Document & { servers?: unknown };
    delete broken.servers;
    const listings = broken.paths['/v1/api/listings/bulk']!.post!.requestBody as { content: Record<string, Media> };
    // note: a bad row is a valid request (it is reported, not refused); a body without its array is not
    listings.content['application/json']!.examples!['valid']!.value = { listings: 'not an array' };
    const rules = (await redoclyLint(broken)).map((p) => p.ruleId);
    expect(rules).toContain('no-empty-servers');
    expect(rules).toContain('no-invalid-media-type-examples');
  }, 60_000);

  it('is what /docs shows (/docs/json)', async () => {
    const res = await service.request({ method: 'GET', url: '/docs/json' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(doc);
  });

  it('documents every route the server registers, with its method, and nothing outside /v1/', () => {
    const routes = registeredRoutes(service.app.printRoutes({ commonPrefix: false }))
      .filter(({ method }) => method !== 'HEAD')
      .filter(({ path }) => path !== '/v1/openapi.json' && path !== '/docs' && !path.startsWith('/docs/'));
    const partnerRoutes = routes.filter(({ path }) => path.startsWith('/v1/'));
    expect(partnerRoutes.length).toBeGreaterThanOrEqual(7);
    for (const { method, path } of partnerRoutes) {
      expect(doc.paths[toOpenapiPath(path)]?.[method.toLowerCase() as 'get'], `${method} ${path}`).toBeDefined();
    }
    // Outside /v1/: only the operator endpoints, behind their own auth and not part of the API.
    for (const { method, path } of routes.filter((r) => !r.path.startsWith('/v1/'))) {
      expect(path, `${method} ${path}`).toMatch(/^\/(metrics$|admin\/queues(\/|$))/);
    }
    const documented = operations(doc).map(({ method, path }) => `${method.toUpperCase()} ${path}`).sort();
    const registered = partnerRoutes.map(({ method, path }) => `${method} ${toOpenapiPath(path)}`).sort();
    expect(documented).toEqual(registered);
  });

  it.each([
    ['get', '/v1/health', []],
    ['get', '/v1/api/me', [{ apiKey: [] }]],
    ['post', '/v1/api/machines/bulk', [{ apiKey: [] }]],
    ['post', '/v1/api/listings/bulk', [{ apiKey: [] }]],
    ['get', '/v1/api/keys', [{ session: [] }]],
    ['post', '/v1/api/keys', [{ session: [] }]],
    ['delete', '/v1/api/keys/{id}', [{ session: [] }]],
  ] as const)('%s %s requires %j', (method, path, security) => {
    expect(doc.paths[path]?.[method]?.security).toEqual(security);
  });

  it('declares both security schemes as HTTP bearer: API key and session JWT', () => {
    expect(doc.components.securitySchemes).toMatchObject({
      apiKey: { type: 'http', scheme: 'bearer', bearerFormat: 'svc_live_<8 hex>_<32 hex>' },
      session: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
    });
    expect(doc.components.securitySchemes.apiKey!.description).toContain('svc_live_');
  });

  it.each(['/v1/api/machines/bulk', '/v1/api/listings/bulk'])('POST %s takes an optional Idempotency-Key of 1 to 255 printable ASCII characters', (path) => {
    const parameter = doc.paths[path]!.post!.parameters?.find((p) => p.in === 'header' && p.name === 'Idempotency-Key');
    expect(parameter).toMatchObject({ required: false, schema: { type: 'string' } });
    const { pattern } = parameter!.schema as { pattern: string };
    expect(new RegExp(pattern).test('a'.repeat(255))).toBe(true);
    expect(new RegExp(pattern).test('a'.repeat(256))).toBe(false);
    expect(new RegExp(pattern).test('caf\u00e9')).toBe(false);
  });

  it.each([
    ['get', '/v1/api/me', '200', ['X-Request-Id', 'X-RateLimit-Limit-Minute', 'X-RateLimit-Remaining-Minute', 'X-RateLimit-Limit-Day', 'X-RateLimit-Remaining-Day'], []],
    ['post', '/v1/api/listings/bulk', '201', ['X-RateLimit-Remaining-Minute'], ['Idempotent-Replayed']],
    ['post', '/v1/api/machines/bulk', '201', ['X-RateLimit-Remaining-Day'], ['Idempotent-Replayed']],
    // note: a lockout refuses before the key is known, so a 429 may come without the rate-limit headers.
    ['post', '/v1/api/listings/bulk', '429', ['Retry-After', 'X-Request-Id'], ['X-RateLimit-Limit-Minute']],
    ['post', '/v1/api/listings/bulk', '503', ['Retry-After'], []],
    // note: the active-key cap's 429 has no Retry-After; the lockout's has.
    ['post', '/v1/api/keys', '429', ['X-Request-Id'], ['Retry-After']],
    ['get', '/v1/health', '200', ['X-Request-Id'], []],
  ] as const)('%s %s %s documents the headers %j as always sent, %j as sometimes', (method, path, status, always, sometimes) => {
    const declared = doc.paths[path]![method]!.responses[status]!.headers ?? {};
    for (const name of always) {
      expect(declared[name]).toEqual({ $ref: `#/components/headers/${name}` });
      expect(doc.components.headers[name]).toMatchObject({ required: true, schema: expect.any(Object), description: expect.any(String) });
    }
    for (const name of sometimes) {
      expect(declared[name]).toMatchObject({ schema: expect.any(Object), description: expect.any(String) });
      expect(declared[name]).not.toHaveProperty('required');
      expect(declared[name]).not.toHaveProperty('$ref');
    }
  });

  // note: 400 `bad_request`, 408 and 431 come from Node's HTTP parser before any route runs, so every
  // operation lists them (openapi-refused-before-route.test.ts sends them to each)
  it.each([
    ['post', '/v1/api/machines/bulk', ['200', '201', '400', '401', '402', '403', '408', '413', '415', '422', '429', '431', '500', '503', '504']],
    ['post', '/v1/api/listings/bulk', ['200', '201', '400', '401', '402', '403', '408', '413', '415', '422', '429', '431', '500', '503', '504']],
    ['get', '/v1/api/me', ['200', '400', '401', '402', '403', '408', '429', '431', '500', '503']],
    ['get', '/v1/api/keys', ['200', '400', '401', '402', '403', '408', '429', '431', '500', '503']],
    ['post', '/v1/api/keys', ['201', '400', '401', '402', '403', '408', '413', '415', '429', '431', '500', '503']],
    ['delete', '/v1/api/keys/{id}', ['200', '400', '401', '402', '403', '404', '408', '413', '414', '415', '429', '431', '500', '503']],
    ['get', '/v1/api/imports/{id}', ['200', '400', '401', '402', '403', '404', '408', '414', '429', '431', '500', '503']],
    ['get', '/v1/api/imports/{id}/errors', ['200', '400', '401', '402', '403', '404', '408', '414', '429', '431', '500', '503']],
    ['post', '/v1/api/imports/{id}/cancel', ['200', '400', '401', '402', '403', '404', '408', '413', '414', '415', '429', '431', '500', '503']],
    ['get', '/v1/health', ['200', '400', '403', '408', '431', '500', '503']],
  ] as const)('%s %s documents the statuses %j', (method, path, statuses) => {
    expect(Object.keys(doc.paths[path]![method]!.responses).sort()).toEqual([...statuses].sort());
  });

  it('gives every JSON response at least one example, and every example matches its own schema; a streamed one an example of each media type', () => {
    let checked = 0;
    for (const { path, method, operation } of operations(doc)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        const streamed = Object.keys(response.content ?? {}).filter((type) => type === 'application/x-ndjson');
        if (streamed.length > 0) {
          // note: an export's body (docs/catalogue.md#export), shown as text in each of its media types
          for (const [type, media] of Object.entries(response.content ?? {})) expect(typeof (media as { example?: unknown }).example, `${method} ${path} ${status} ${type}`).toBe('string');
          continue;
        }
        const media = response.content?.['application/json'];
        expect(media, `${method} ${path} ${status}`).toBeDefined();
        expect(Object.keys(media!.examples ?? {}).length, `${method} ${path} ${status} examples`).toBeGreaterThan(0);
        for (const [name, example] of Object.entries(media!.examples ?? {})) {
          const where = pointer('paths', path, method, 'responses', status, 'content', 'application/json', 'schema');
          const result = validates(where, example.value);
          expect(result, `${method} ${path} ${status} example ${name}`).toEqual({ valid: true, errors: null });
          checked += 1;
        }
      }
    }
    expect(checked).toBeGreaterThan(50);
  });

  /** The open list of codes (src/shared/rows/open-enum.ts): the known ones, and any string. */
  const openCodes = (known: readonly string[]) => ({ anyOf: [{ type: 'string', enum: known }, { type: 'string' }] });

  it('lists the code of every error response as the codes its examples show, from the catalogue, open to codes added later', () => {
    let checked = 0;
    for (const { path, method, operation } of operations(doc)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        const media = response.content?.['application/json'];
        const schema = media?.schema as { allOf?: [{ $ref: string }, { properties: { code: { anyOf: unknown[]; enum?: unknown } }; required: string[] }] };
        if (Number(status) < 400 || schema.allOf === undefined) continue;
        const shown = [...new Set(Object.values(media!.examples ?? {}).map((e) => (e.value as { code: string }).code))];
        expect(schema.allOf[0].$ref, `${method} ${path} ${status}`).toMatch(/^#\/components\/schemas\/\w*Error$/);
        expect(schema.allOf[1].properties.code, `${method} ${path} ${status}`).toMatchObject(openCodes(shown));
        expect(schema.allOf[1].properties.code).not.toHaveProperty('enum');
        expect(schema.allOf[1].required).toEqual(['code']);
        for (const code of shown) expect(API_ERROR_CODES).toContain(code);
        checked += 1;
      }
    }
    // every error status of every route but the health check's 503, which is not an error body
    const errorStatuses = operations(doc).flatMap(({ operation }) => Object.keys(operation.responses).filter((status) => Number(status) >= 400));
    expect(checked).toBe(errorStatuses.length - 1);
    // and every error shape lists the whole catalogue, open too
    const shapes = Object.entries((doc.components as unknown as { schemas: Record<string, { properties?: { code?: unknown } }> }).schemas).filter(([name]) => name.endsWith('Error'));
    expect(shapes.length).toBeGreaterThanOrEqual(6);
    for (const [name, shape] of shapes) expect(shape.properties?.code, name).toMatchObject(openCodes(API_ERROR_CODES));
  });

  it('says the codes are open where a client reads them: each code\'s description and the introduction', () => {
    const where = pointer('paths', '/v1/api/listings/bulk', 'post', 'responses', '429', 'content', 'application/json', 'schema');
    const schema = ajv.getSchema(`openapi${where}`)?.schema as { allOf: [unknown, { properties: { code: { description: string } } }] };
    expect(schema.allOf[1].properties.code.description).toContain('a client must handle a code it does not know as its HTTP status says');
    expect(doc.info.description).toContain('new codes may be added, so handle a code you do not know as its HTTP status says (never fail on it)');
  });

  it('admits an error body with a code its status does not list (codes may be added), and lists the known ones (a generated client can switch on them)', () => {
    const where = pointer('paths', '/v1/api/listings/bulk', 'post', 'responses', '429', 'content', 'application/json', 'schema');
    for (const code of ['rate_limited_minute', 'rate_limited_day', 'too_many_concurrent_requests', 'locked_out']) {
      expect(validates(where, { error: 'x', code, retry_after_sec: 1 }).valid, code).toBe(true);
    }
    expect(validates(where, { error: 'x', code: 'rate_limited_week', retry_after_sec: 1 }).valid).toBe(true);
    expect(validates(where, { error: 'x', code: 'invalid_json', retry_after_sec: 1 }).valid).toBe(true);
    // still a string, still required, and the rest of the shape holds
    expect(validates(where, { error: 'x', code: 429, retry_after_sec: 1 }).valid).toBe(false);
    expect(validates(where, { error: 'x', retry_after_sec: 1 }).valid).toBe(false);
    expect(validates(where, { error: 'x', code: 'rate_limited_week' }).valid).toBe(false);
  });

  it('rejects an example that does not match (the schemas are resolved, not empty)', () => {
    const where = pointer('paths', '/v1/api/listings/bulk', 'post', 'responses', '201', 'content', 'application/json', 'schema');
    expect(validates(where, { inserted: 1, skipped: 0, errors: [], import_id: 'imp-1' }).valid).toBe(true);
    expect(validates(where, { inserted: '1', skipped: 0, errors: [], import_id: 'imp-1' }).valid).toBe(false);
    expect(validates(where, { inserted: 1, skipped: 0, errors: [] }).valid).toBe(false);
    expect(validates(where, { inserted: 1, skipped: 0, errors: [], extra: true }).valid).toBe(false);
  });

  it.each([
    ['listings', 'a blank title', { title: '   ' }],
    ['listings', 'an http:// photo URL', { photo_urls: ['http://cdn.example.com/a.jpg'] }],
    ['listings', 'a relative photo URL', { photo_urls: ['/a.jpg'] }],
    ['listings', 'a photo URL of 2,049 characters', { photo_urls: [`https://cdn.example.com/${'p'.repeat(2_025)}`] }],
    ['listings', '101 tags', { tags: Array.from({ length: 101 }, (_, i) => `t${i}`) }],
    ['listings', '101 photo URLs', { photo_urls: Array.from({ length: 101 }, (_, i) => `https://cdn.example.com/${i}.jpg`) }],
    ['machines', 'a category of 81 characters', { category: 'c'.repeat(81) }],
    ['machines', 'a blank model', { model: '\t ' }],
  ] as const)('declares a %s row with %s invalid, as the service finds it, and its batch a request it takes', (kind, _what, change) => {
    const row = pointer('components', 'schemas', ROW_COMPONENTS[kind]);
    const body = pointer('paths', `/v1/api/${kind}/bulk`, 'post', 'requestBody', 'content', 'application/json', 'schema');
    const valid = kind === 'listings' ? validListing() : validMachine();
    const invalid = { ...valid, ...change };
    expect(validates(row, valid).valid).toBe(true);
    expect(validates(row, invalid).valid).toBe(false);
    // note: the row is skipped and reported, the others written: the request is one the service answers 201
    expect(validates(body, { [kind]: [valid, invalid] }).valid).toBe(true);
  });

  it.each([
    ['listings', 'an id and a price', { external_id: 'SKU-1', price_cents: 1_999 }, true],
    ['listings', 'optional fields cleared and booleans defaulted with null', { external_id: 'SKU-1', color: null, tags: null, print_time_hours: null, is_available: null }, true],
    ['listings', 'a whole row', { ...validListing(), external_id: 'SKU-1' }, true],
    ['listings', 'no external_id', { price_cents: 1_999 }, false],
    ['listings', 'a null external_id', { external_id: null, price_cents: 1_999 }, false],
    ['listings', 'a blank external_id', { external_id: ' \t', price_cents: 1_999 }, false],
    ['listings', 'a required field cleared', { external_id: 'SKU-1', title: null }, false],
    ['listings', 'a price as a string', { external_id: 'SKU-1', price_cents: '19.99' }, false],
    ['listings', 'a category of no list', { external_id: 'SKU-1', category: 'boats' }, false],
    ['machines', 'a nickname cleared', { external_id: 'M-1', nickname: null, model_number: null }, true],
    ['machines', 'a category of 81 characters', { external_id: 'M-1', category: 'c'.repeat(81) }, false],
    ['machines', 'a boolean as a string', { external_id: 'M-1', is_skill_station: 'yes' }, false],
  ] as const)('declares a %s merge row with %s as the service checks it', (kind, _what, row, valid) => {
    expect(validates(pointer('components', 'schemas', MERGE_ROW_COMPONENTS[kind]), row).valid).toBe(valid);
    const checked = kind === 'listings' ? validateMergeRow(MERGE_RULES.listings, row, 0) : validateMergeRow(MERGE_RULES.machines, row, 0);
    expect('row' in checked).toBe(valid);
  });

  it.each(['listings', 'machines'] as const)('points each row of the %s body at the component of a valid row, kept for generators', (kind) => {
    const body = doc.paths[`/v1/api/${kind}/bulk`]!.post!.requestBody!.content['application/json']!.schema as {
      properties: Record<string, { minItems: number; maxItems: number; items: { anyOf: object[] } & Record<string, unknown> }>;
      required: string[];
    };
    const rows = body.properties[kind]!;
    expect(rows).toMatchObject({ minItems: 1, maxItems: kind === 'listings' ? 200 : 500 });
    expect(body.required).toEqual([kind]);
    expect(rows.items[ROW_SCHEMA_EXTENSION]).toBe(`#/components/schemas/${ROW_COMPONENTS[kind]}`);
    expect(rows.items.anyOf[0]).toEqual({ $ref: `#/components/schemas/${ROW_COMPONENTS[kind]}` });
    expect(rows.items[MERGE_ROW_SCHEMA_EXTENSION]).toBe(`#/components/schemas/${MERGE_ROW_COMPONENTS[kind]}`);
    expect(rows.items.anyOf[1]).toEqual({ $ref: `#/components/schemas/${MERGE_ROW_COMPONENTS[kind]}` });
    expect(ajv.getSchema(`openapi${pointer('components', 'schemas', ROW_COMPONENTS[kind])}`)).toBeDefined();
    const where = pointer('paths', `/v1/api/${kind}/bulk`, 'post', 'requestBody', 'content', 'application/json', 'schema');
    // what the service refuses as a whole, the document refuses
    expect(validates(where, { [kind]: [] }).valid).toBe(false);
    expect(validates(where, { [kind]: Array.from({ length: kind === 'listings' ? 201 : 501 }, () => ({})) }).valid).toBe(false);
    expect(validates(where, [{}]).valid).toBe(false);
    expect(validates(where, { [kind]: {} }).valid).toBe(false);
    // what it answers 201 row by row, the document takes
    expect(validates(where, { [kind]: [{}, 42, null, 'row', [1]] }).valid).toBe(true);
  });

  it('publishes the row-error codes as an open list, the codes the service uses, open to codes added later', () => {
    const text = JSON.stringify(doc);
    const lists = [...text.matchAll(/"anyOf":\[\{"type":"string","enum":\[("not_an_object"[^\]]*)\]\},\{"type":"string"\}\]/g)].map((m) => JSON.parse(`[${m[1]}]`) as string[]);
    expect(lists.length).toBeGreaterThan(0);
    for (const codes of lists) expect(codes).toEqual(ROW_ERROR_CODES);
    // and no closed list of them is left
    expect(text.match(/"type":"string","enum":\["not_an_object"/g)?.length).toBe(lists.length);
    expect(text).not.toMatch(/"enum":\["not_an_object"[^\]]*\](?!\},\{"type":"string"\}\])/);
    // and says what each one means, in the words of docs/rows.md
    for (const code of ROW_ERROR_CODES) expect(text).toContain(JSON.stringify(`- \`${code}\`: ${ROW_ERROR_CODE_MEANINGS[code]}`).slice(1, -1));
  });

  it.each(['listings', 'machines'])('documents the %s dry run: the dry_run parameter, its 200 and the sync counts of the 201', (kind) => {
    const operation = doc.paths[`/v1/api/${kind}/bulk`]!.post! as { parameters?: { name: string; in: string; schema: { enum?: string[] } }[] };
    const dryRun = operation.parameters?.find((p) => p.name === 'dry_run');
    expect(dryRun).toMatchObject({ in: 'query', schema: { enum: ['true', 'false'] } });
    const ok = pointer('paths', `/v1/api/${kind}/bulk`, 'post', 'responses', '200', 'content', 'application/json', 'schema');
    expect(validates(ok, { inserted: 1, updated: 2, unchanged: 3, skipped: 0, errors: [], dry_run: true }).valid).toBe(true);
    expect(validates(ok, { inserted: 1, skipped: 0, errors: [] }).valid).toBe(false);
    const created = pointer('paths', `/v1/api/${kind}/bulk`, 'post', 'responses', '201', 'content', 'application/json', 'schema');
    const error = { index: 4, external_id: 'SKU-1', reason: 'currency: must be exactly USD', details: [{ field: 'currency', code: 'not_allowed', message: 'must be exactly USD' }] };
    expect(validates(created, { inserted: 1, updated: 2, unchanged: 3, skipped: 1, errors: [error], import_id: 'imp-1' }).valid).toBe(true);
    // the codes are open: one added later is a valid answer; one that is no string is not
    expect(validates(created, { inserted: 1, skipped: 1, errors: [{ ...error, details: [{ ...error.details[0], code: 'bad_currency' }] }], import_id: 'imp-1' }).valid).toBe(true);
    expect(validates(created, { inserted: 1, skipped: 1, errors: [{ ...error, details: [{ ...error.details[0], code: 7 }] }], import_id: 'imp-1' }).valid).toBe(false);
    // the answer always has details (only a job from an older replica may lack them, inside)
    expect(validates(created, { inserted: 1, skipped: 1, errors: [{ index: 4, reason: error.reason }] }).valid).toBe(false);
    const valid = pointer('components', 'schemas', ROW_COMPONENTS[kind as 'listings' | 'machines']);
    const row = kind === 'listings' ? validListing() : validMachine();
    expect(validates(valid, { ...row, external_id: 'SKU-1' }).valid).toBe(true);
    expect(validates(valid, { ...row, external_id: 'x'.repeat(101) }).valid).toBe(false);
    // the 100 characters are counted once trimmed, as the service counts them
    expect(validates(valid, { ...row, external_id: ` ${'x'.repeat(100)}\t` }).valid).toBe(true);
    expect(validates(valid, { ...row, external_id: ' \t ' }).valid).toBe(false);
  });

  it('declares a padded https URL valid, as the service trims it', () => {
    const where = pointer('components', 'schemas', ROW_COMPONENTS.listings);
    expect(validates(where, validListing({ photo_urls: ['  HTTPS://cdn.example.com/a.jpg?x=1 '] })).valid).toBe(true);
  });

  it('gives every operation an id, a summary and a description', () => {
    for (const { path, method, operation } of operations(doc)) {
      const op = operation as { operationId?: string; summary?: string; description?: string };
      expect(op.operationId, `${method} ${path}`).toEqual(expect.any(String));
      expect(op.summary, `${method} ${path}`).toEqual(expect.any(String));
      expect(op.description?.length, `${method} ${path}`).toBeGreaterThan(10);
    }
  });

  it('shows only request examples that match the body schema (tools replay them as valid requests)', () => {
    let checked = 0;
    for (const { path, method, operation } of operations(doc)) {
      const media = operation.requestBody?.content['application/json'];
      if (media === undefined) continue;
      const where = pointer('paths', path, method, 'requestBody', 'content', 'application/json', 'schema');
      for (const [name, example] of Object.entries(media.examples ?? {})) {
        expect(validates(where, example.value).valid, `${method} ${path} example ${name}`).toBe(true);
        checked += 1;
      }
    }
    // note: at least the example of each bulk endpoint.
    expect(checked).toBeGreaterThanOrEqual(2);
  });

  it('carries the changelog in its description, and its version is the newest changelog entry', () => {
    expect(doc.info.description).toContain(changelogSection(CHANGELOG));
    expect(doc.info.version).toBe(SERVICE_VERSION);
    const newest = /^## (\S+) — (\d{4}-\d{2}-\d{2})$/m.exec(CHANGELOG);
    expect(newest?.[1]).toBe(SERVICE_VERSION);
  });
});

describe('CHANGELOG.md', () => {
  it('lists dated versions newest first, with UTC dates', () => {
    const dated = [...CHANGELOG.matchAll(/^## (\S+) — (\d{4}-\d{2}-\d{2})$/gm)].map((m) => m[2]!);
    expect(dated.length).toBeGreaterThan(0);
    expect([...dated].sort().reverse()).toEqual(dated);
    for (const date of dated) expect(new Date(`${date}T00:00:00Z`).toISOString().slice(0, 10)).toBe(date);
  });

  it.each([
    'Idempotency-Key',
    'Idempotent-Replayed',
    '422',
    'Import workers unavailable; nothing was written',
    'Import failed; nothing was written',
    'Service temporarily unavailable',
    'Import is still running; check before retrying',
    'limit_bytes',
    '415',
    'X-Request-Id',
    'Invalid JSON body',
    'USD-only',
    '`currency` became required',
    'The two bulk endpoints were added',
    'Launch:',
  ])('mentions %s', (text) => {
    expect(CHANGELOG).toContain(text);
  });
});

describe('responses the server sends match the document', () => {
  let service: TestService;
  let doc: Document;
  let ajv: Ajv2020;

  beforeAll(async () => {
    service = await startTestService();
    doc = (await service.request({ method: 'GET', url: '/v1/openapi.json' })).json();
    ajv = documentValidator(doc);
  });
  afterAll(async () => {
    await service?.close();
  });

  const DOCUMENTED_HEADERS = [
    'x-request-id', 'x-ratelimit-limit-minute', 'x-ratelimit-remaining-minute', 'x-ratelimit-limit-day', 'x-ratelimit-remaining-day',
    'ratelimit-policy', 'ratelimit', 'retry-after', 'idempotent-replayed',
  ];

  /**
   * The reply's status is documented for the operation, its body matches, each documented header
   * it carries is declared, and an error's text is among the status's examples.
   */
  function expectDocumented(path: string, method: 'get' | 'post' | 'patch' | 'delete', res: LightMyRequestResponse): void {
    const status = String(res.statusCode);
    const response = doc.paths[path]?.[method]?.responses[status];
    expect(response, `${method} ${path} ${status}: ${res.body}`).toBeDefined();
    const validate = ajv.compile({ $ref: `openapi${pointer('paths', path, method, 'responses', status, 'content', 'application/json', 'schema')}` });
    expect(validate(res.json()), `${method} ${path} ${status}: ${JSON.stringify(validate.errors)}`).toBe(true);
    const declared = Object.keys(response!.headers ?? {}).map((name) => name.toLowerCase());
    for (const name of DOCUMENTED_HEADERS.filter((h) => res.headers[h] !== undefined)) {
      expect(declared, `${method} ${path} ${status} sends ${name}`).toContain(name);
    }
    expect(res.headers['x-request-id']).toBeDefined();
    if (res.statusCode >= 400) {
      // The error text the server sent is one the document shows for that status.
      const shown = Object.values(response!.content!['application/json']!.examples ?? {}).map((e) => e.value as { error: string; code: string });
      const sent = res.json() as { error: string; code: string };
      expect(shown.map((e) => e.error), `${method} ${path} ${status}`).toContain(sent.error);
      // and with the code the document pairs with that text
      expect(shown.filter((e) => e.error === sent.error).map((e) => e.code), `${method} ${path} ${status}`).toContain(sent.code);
    }
  }

  it('for the API-key endpoints: 200, 201, 400, 401, 402, 403, 413, 415, 422 and a replay', async () => {
    const account = await service.createAccount();
    const key = await service.createKey(account, ['listings:write']);
    const readOnly = await service.createKey(account, ['jobs:read']);
    const proAccount = await service.createAccount();
    const proKey = await service.createKey(proAccount);
    await setAccountTier(service.sql, proAccount.id, 'pro');
    const listings = '/v1/api/listings/bulk';
    const machines = '/v1/api/machines/bulk';
    const idempotencyKey = randomUUID();
    const body = { listings: [validListing(), validListing({ currency: 'EUR' })] };

    const checks: [string, 'get' | 'post', Promise<LightMyRequestResponse>, number][] = [
      ['/v1/api/me', 'get', service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key) }), 200],
      ['/v1/api/me', 'get', service.request({ method: 'GET', url: '/v1/api/me' }), 401],
      ['/v1/api/me', 'get', service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(proKey) }), 402],
      ['/v1/api/me', 'get', service.request({ method: 'GET', url: '/v1/api/me', headers: { ...bearer(key), origin: 'https://elsewhere.example' } }), 403],
      [machines, 'post', service.request({ method: 'POST', url: machines, headers: bearer(key), payload: { machines: [validMachine(), validMachine({ model: '' })] } }), 201],
      [listings, 'post', service.request({ method: 'POST', url: listings, headers: bearer(readOnly), payload: body }), 403],
      [listings, 'post', service.request({ method: 'POST', url: listings, headers: bearer(key), payload: { listings: [] } }), 400],
      [listings, 'post', service.request({ method: 'POST', url: listings, headers: bearer(key), payload: { listings: [validListing({ currency: 'EUR' })] } }), 400],
      [machines, 'post', service.request({ method: 'POST', url: `${machines}?dryRun=true`, headers: bearer(key), payload: { machines: [validMachine()] } }), 400],
      [listings, 'post', service.request({ method: 'POST', url: listings, headers: { ...bearer(key), 'content-type': 'application/xml' }, payload: '<listings/>' }), 415],
      [machines, 'post', service.request({ method: 'POST', url: machines, headers: { ...bearer(key), 'content-type': 'application/json' }, payload: `"${'x'.repeat(1_048_577)}"` }), 413],
    ];
    for (const [path, method, pending, status] of checks) {
      const res = await pending;
      expect(res.statusCode, `${method} ${path}: ${res.body}`).toBe(status);
      expectDocumented(path, method, res);
    }

    const first = await service.request({ method: 'POST', url: listings, headers: { ...bearer(key), 'idempotency-key': idempotencyKey }, payload: body });
    expect(first.statusCode).toBe(201);
    expectDocumented(listings, 'post', first);
    const replay = await service.request({ method: 'POST', url: listings, headers: { ...bearer(key), 'idempotency-key': idempotencyKey }, payload: body });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expectDocumented(listings, 'post', replay);
    const conflict = await service.request({ method: 'POST', url: listings, headers: { ...bearer(key), 'idempotency-key': idempotencyKey }, payload: { listings: [validListing()] } });
    expect(conflict.statusCode).toBe(422);
    expectDocumented(listings, 'post', conflict);
  });

  it('for key management: 200, 201, 400, 401, 404', async () => {
    const account = await service.createAccount();
    const session = bearer(account.sessionToken);
    const created = await service.request({ method: 'POST', url: '/v1/api/keys', headers: session, payload: { label: 'docs', scopes: ['listings_write'] } });
    expect(created.statusCode).toBe(201);
    expectDocumented('/v1/api/keys', 'post', created);
    const refused = await service.request({ method: 'POST', url: '/v1/api/keys', headers: session, payload: { label: 'docs', scopes: ['listing:write'] } });
    expect(refused.statusCode).toBe(400);
    expectDocumented('/v1/api/keys', 'post', refused);
    const listed = await service.request({ method: 'GET', url: '/v1/api/keys', headers: session });
    expect(listed.statusCode).toBe(200);
    expectDocumented('/v1/api/keys', 'get', listed);
    const unauthenticated = await service.request({ method: 'GET', url: '/v1/api/keys' });
    expect(unauthenticated.statusCode).toBe(401);
    expectDocumented('/v1/api/keys', 'get', unauthenticated);
    const id = (created.json() as { metadata: { id: string } }).metadata.id;
    const revoked = await service.request({ method: 'DELETE', url: `/v1/api/keys/${id}`, headers: session });
    expect(revoked.statusCode).toBe(200);
    expectDocumented('/v1/api/keys/{id}', 'delete', revoked);
    const missing = await service.request({ method: 'DELETE', url: '/v1/api/keys/not-a-key', headers: session });
    expect(missing.statusCode).toBe(404);
    expectDocumented('/v1/api/keys/{id}', 'delete', missing);
  });

  it('for the key lifecycle: a roll\'s 201, 400, 404, 409; a change\'s 200, 400, 404, 409; an expired key\'s 401 and a refused address\'s 403', async () => {
    const account = await service.createAccount();
    const session = bearer(account.sessionToken);
    const created = await service.request({ method: 'POST', url: '/v1/api/keys', headers: session, payload: { label: 'docs', scopes: ['listings:write'], allowed_ips: ['203.0.113.0/24'] } });
    expectDocumented('/v1/api/keys', 'post', created);
    const { key, metadata } = created.json<{ key: string; metadata: { id: string } }>();
    const roll = (id: string, payload?: object) => service.request({ method: 'POST', url: `/v1/api/keys/${id}/roll`, headers: session, ...(payload ? { payload } : {}) });
    const change = (id: string, payload: object) => service.request({ method: 'PATCH', url: `/v1/api/keys/${id}`, headers: session, payload });
    const checks: [string, 'get' | 'post' | 'patch', () => Promise<LightMyRequestResponse>, number][] = [
      ['/v1/api/me', 'get', () => service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key), remoteAddress: '198.51.100.9' }), 403],
      ['/v1/api/listings/bulk', 'post', () => service.request({ method: 'POST', url: '/v1/api/listings/bulk', headers: bearer(key), payload: { listings: [validListing()] }, remoteAddress: '198.51.100.9' }), 403],
      ['/v1/api/keys/{id}', 'patch', () => change(metadata.id, { allowed_ips: ['203.0.113.0/24', '2001:db8::/32'] }), 200],
      ['/v1/api/keys/{id}', 'patch', () => change(metadata.id, { allowed_ips: [] }), 400],
      ['/v1/api/keys/{id}', 'patch', () => change(randomUUID(), { label: 'x' }), 404],
      ['/v1/api/keys/{id}/roll', 'post', () => roll(metadata.id, { expires_in_sec: -1 }), 400],
      ['/v1/api/keys/{id}/roll', 'post', () => roll(randomUUID()), 404],
      ['/v1/api/keys/{id}/roll', 'post', () => roll(metadata.id, { expires_in_sec: 0 }), 201],
      ['/v1/api/keys/{id}/roll', 'post', () => roll(metadata.id), 409],
      ['/v1/api/keys/{id}', 'patch', () => change(metadata.id, { label: 'x' }), 409],
      ['/v1/api/me', 'get', () => service.request({ method: 'GET', url: '/v1/api/me', headers: bearer(key), remoteAddress: '203.0.113.9' }), 401],
      ['/v1/api/keys', 'get', () => service.request({ method: 'GET', url: '/v1/api/keys?status=expired', headers: session }), 200],
    ];
    for (const [path, method, send, status] of checks) {
      const res = await send();
      expect(res.statusCode, `${method} ${path}: ${res.body}`).toBe(status);
      expectDocumented(path, method, res);
    }
  });

  it('for health: 200', async () => {
    const res = await service.request({ method: 'GET', url: '/v1/health' });
    expect(res.statusCode).toBe(200);
    expectDocumented('/v1/health', 'get', res);
  });
});

describe('GET /docs', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
  });
  afterAll(async () => {
    await service?.close();
  });

  it.each(['/docs', '/docs/'])('%s serves the reference as HTML whose scripts, styles and icons all come from this server', async (url) => {
    const res = await service.request({ method: 'GET', url });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    const references = [...res.body.matchAll(/\b(?:src|href)\s*=\s*["']([^"']+)["']/g)].map((m) => m[1]!);
    expect(references.length).toBeGreaterThanOrEqual(5);
    for (const reference of references) {
      // note: relative or rooted paths only: no scheme, no protocol-relative //host.
      expect(reference, reference).not.toMatch(/^([a-z][a-z0-9+.-]*:|\/\/)/i);
      const asset = await service.request({ method: 'GET', url: new URL(reference, `http://docs.test${url}`).pathname });
      expect(asset.statusCode, reference).toBe(200);
    }
    expect(res.body).not.toMatch(/https?:\/\//);
  });

  it('tells the browser to load nothing from another host, and never asks the online validator', async () => {
    const res = await service.request({ method: 'GET', url: '/docs/' });
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toMatch(/https?:|\*|validator\.swagger\.io/);
    const initializer = await service.request({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
    expect(initializer.statusCode).toBe(200);
    expect(initializer.body).toContain('validatorUrl: null');
    expect(initializer.body).toContain('"supportedSubmitMethods":[]');
  });

  it('needs no key and is not under the API lockout', async () => {
    const res = await service.request({ method: 'GET', url: '/v1/openapi.json', headers: { authorization: 'Bearer nonsense' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-ratelimit-limit-minute']).toBeUndefined();
  });
});
