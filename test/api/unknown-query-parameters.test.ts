import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ImportKind } from '../../src/shared/import/import-kinds.js';
import { bearer, validListing, validMachine } from '../support/fixtures.js';
import { newPartner, storedFor } from '../support/bulk-endpoint.js';
import { startTestService, type TestService } from '../support/test-service.js';

const validRow = (kind: ImportKind) => (kind === 'listings' ? validListing() : validMachine());
const NOTHING = { listings: 0, machines: 0, imports: 0, idempotencyKeys: 0 };

/** A bulk request takes `dry_run` and no other query parameter (docs/endpoints.md#dry-run). */
describe.each(['listings', 'machines'] as const)('POST /v1/api/%s/bulk with a query parameter other than dry_run', (kind) => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => {
    await service?.close();
  });

  const post = (key: string, query: string) =>
    service.request({ method: 'POST', url: `/v1/api/${kind}/bulk?${query}`, headers: bearer(key), payload: { [kind]: [validRow(kind)] } });

  it.each([
    ['dryRun=true', 'dryRun'],
    ['dry-run=true', 'dry-run'],
    ['DRY_RUN=true', 'DRY_RUN'],
    ['dry_run=true&dryRun=true', 'dryRun'],
    ['dry_run=false&page=2', 'page'],
    ['dry_run=maybe&dryRun=true', 'dryRun'],
    // the first unknown name in the order sent, not in the order an object would list it
    ['sort=asc&2=x', 'sort'],
    ['dry+run=true', 'dry run'],
    ['dry%5Frun%5F=true', 'dry_run_'],
    ['caf%C3%A9=1', 'café'],
    ['%ZZ=1', '%ZZ'],
  ])('answers ?%s 400 "Unknown query parameter: %s", writes nothing, and counts it against the rate limits', async (query, name) => {
    const { account, key } = await newPartner(service);
    const res = await post(key, query);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: `Unknown query parameter: ${name}`, code: 'unknown_query_parameter' });
    expect(res.headers['x-ratelimit-remaining-minute']).toBe(String(300 - 1));
    expect(await storedFor(service, account)).toEqual(NOTHING);
  });

  it.each([
    ['a control character (ESC), written as \\u001b', '%1B%5B2Jx=1', 'Unknown query parameter: \\u001b[2Jx'],
    ['a NUL', 'dry_run%00=true', 'Unknown query parameter: dry_run\\u0000'],
    ['a right-to-left override', 'a%E2%80%AEb=1', 'Unknown query parameter: a\\u202eb'],
    ['an empty name, shown as ""', '=true', 'Unknown query parameter: ""'],
    ['a name of 5,000 characters, cut to 64 and "…"', `${'n'.repeat(5_000)}=1`, `Unknown query parameter: ${'n'.repeat(64)}…`],
    ['escapes counted in the 64', `${'%01'.repeat(20)}=1`, `Unknown query parameter: ${'\\u0001'.repeat(10)}…`],
  ])('shows the name safely: %s', async (_what, query, error) => {
    const { key } = await newPartner(service);
    const res = await post(key, query);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error, code: 'unknown_query_parameter' });
    // The body is JSON with nothing a terminal acts on, and no log line carries a raw control character.
    // eslint-disable-next-line no-control-regex -- control characters are what must not come back
    expect(res.body).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
    // note: log lines end with a newline; nothing else of C0 may be in them.
    // eslint-disable-next-line no-control-regex -- control characters are what must not come back
    expect(service.rawLogs()).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u202e]/);
  });

  it('is decided after the key and the scope: without a key 401, with a key lacking the scope 403', async () => {
    expect((await service.request({ method: 'POST', url: `/v1/api/${kind}/bulk?dryRun=true`, payload: { [kind]: [validRow(kind)] } })).statusCode).toBe(401);
    const { key } = await newPartner(service, {}, ['jobs:read']);
    const res = await post(key, 'dryRun=true');
    expect(res.statusCode).toBe(403);
  });

  it('is decided before the body is read: an unknown parameter with a body over the limit is the 400, not the 413', async () => {
    const { key } = await newPartner(service);
    const res = await service.request({
      method: 'POST',
      url: `/v1/api/${kind}/bulk?dryRun=true`,
      headers: { ...bearer(key), 'content-type': 'application/json' },
      payload: `"${'x'.repeat(2_097_152)}"`,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'Unknown query parameter: dryRun', code: 'unknown_query_parameter' });
    expect(res.headers.connection).toBe('close');
  });

  it('still takes ?dry_run=true as a dry run and no query string as an import', async () => {
    const { account, key } = await newPartner(service);
    expect((await post(key, 'dry_run=true')).statusCode).toBe(200);
    expect((await service.request({ method: 'POST', url: `/v1/api/${kind}/bulk`, headers: bearer(key), payload: { [kind]: [validRow(kind)] } })).statusCode).toBe(201);
    expect((await post(key, '')).statusCode).toBe(201);
    expect((await storedFor(service, account))[kind]).toBe(2);
  });
});

/** The other routes that take a query answer an unknown parameter the same way, its name echoed. */
describe('an unknown query parameter of 10,000 characters or with a U+202E, on the routes that read', () => {
  let service: TestService;
  let key: string;
  let sessionToken: string;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
    ({ key } = await newPartner(service));
    sessionToken = (await service.createAccount()).sessionToken;
  });
  afterAll(async () => {
    await service?.close();
  });

  const routes: [string, string, 'key' | 'session'][] = [
    ['GET /v1/api/imports', '/v1/api/imports', 'key'],
    ['GET /v1/api/imports/{id}', `/v1/api/imports/${crypto.randomUUID()}`, 'key'],
    ['GET /v1/api/imports/{id}/errors', `/v1/api/imports/${crypto.randomUUID()}/errors`, 'key'],
    ['GET /v1/api/keys', '/v1/api/keys', 'session'],
  ];
  const names: [string, string, string][] = [
    ['10,000 characters', `${'n'.repeat(10_000)}=1`, `${'n'.repeat(64)}…`],
    ['a U+202E', 'a%E2%80%AEb=1', 'a\\u202eb'],
    ['a U+202E and 10,000 characters', `%E2%80%AE${'n'.repeat(10_000)}=1`, `\\u202e${'n'.repeat(58)}…`],
  ];

  describe.each(routes)('%s', (_route, path, auth) => {
    it.each(names)('answers a name of %s 400, the name at most 64 characters, escaped', async (_what, query, shown) => {
      const res = await service.request({ method: 'GET', url: `${path}?${query}`, headers: bearer(auth === 'key' ? key : sessionToken) });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: `Unknown query parameter: ${shown}`, code: 'unknown_query_parameter' });
      expect(res.body.length).toBeLessThan(200);
      expect(res.body).not.toContain('\u202e');
      expect(service.rawLogs()).not.toContain('\u202e');
    });
  });
});
