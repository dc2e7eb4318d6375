import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IMPORT_KINDS, type ImportKind } from '../../src/shared/import/import-kinds.js';
import { bearer, validListing, validMachine } from '../support/fixtures.js';
import { bodyOfSize, bulkEndpoint, type Snapshot } from '../support/bulk-endpoint.js';
import { startTestService, type TestAccount, type TestService } from '../support/test-service.js';
import { rowError } from '../support/row-errors.js';

/**
 * What both bulk endpoints promise alike, run once for each (docs/rows.md#the-request,
 * docs/access.md#order-of-checks): refusals that write nothing, the scope checked before the
 * body, each account's rows kept to itself, the rate-limit headers. What differs between them
 * (the row rules, what is stored) is in listings-bulk.test.ts and machines-bulk.test.ts.
 */
const KINDS = [
  { kind: 'machines', row: validMachine, label: 'template_id' },
  { kind: 'listings', row: validListing, label: 'title' },
] as const satisfies readonly { kind: ImportKind; row: (overrides?: Record<string, unknown>) => object; label: string }[];

describe.each(KINDS)('POST /v1/api/$kind/bulk (the bulk endpoint contract)', ({ kind, row, label }) => {
  const { maxRows, bodyLimitBytes } = IMPORT_KINDS[kind];
  let service: TestService;
  let kit: ReturnType<typeof bulkEndpoint>;

  beforeAll(async () => {
    service = await startTestService();
    kit = bulkEndpoint(service, kind);
  });
  afterAll(async () => {
    await kit?.close();
    await service?.close();
  });

  const labelled = (value: string) => row({ [label]: value });
  async function labelsOf(account: TestAccount): Promise<string[]> {
    const rows = await service.sql<{ label: string }[]>`
      select ${service.sql(label)} as label from ${service.sql(kind)} where account_id = ${account.id} order by 1`;
    return rows.map((r) => r.label);
  }

  describe('refused requests write nothing', () => {
    let key: string;
    let before: Snapshot;

    beforeAll(async () => {
      ({ key } = await kit.partner());
    });

    async function expectRefused(res: LightMyRequestResponse, status: number, body: unknown) {
      expect(res.statusCode).toBe(status);
      expect(res.json()).toEqual(body);
      expect(await kit.snapshot()).toEqual(before);
    }

    it.each([
      ['a truncated document', `{"${kind}": [`],
      ['unquoted keys', `{${kind}: []}`],
      ['single quotes', `{'${kind}': []}`],
      ['plain text', `${kind} please`],
      ['a trailing comma', `{"${kind}": [${JSON.stringify(row())},]}`],
      ['an empty body', ''],
    ])('400 Invalid JSON body for %s', async (_case, body) => {
      before = await kit.snapshot();
      await expectRefused(await kit.postRaw(key, body), 400, { error: 'Invalid JSON body', code: 'invalid_json' });
    });

    it.each(['text/plain', 'application/xml', 'application/x-www-form-urlencoded'])('415 for a %s body, even one that holds valid JSON', async (contentType) => {
      before = await kit.snapshot();
      const res = await service.request({
        method: 'POST',
        url: kit.path,
        headers: { ...bearer(key), 'content-type': contentType },
        payload: JSON.stringify({ [kind]: [row()] }),
      });
      await expectRefused(res, 415, { error: 'Content-Type must be application/json', code: 'unsupported_media_type' });
    });

    // note: docs/architecture.md states this order; the query and the key are checked by the
    // route's schemas, before the handler reads the body.
    it.each([
      ['a malformed dry_run before a malformed Idempotency-Key', '?dry_run=yes', 'caf\u00e9', '{', 'dry_run must be true or false', 'invalid_dry_run'],
      ['a malformed Idempotency-Key before a dry run with a key', '?dry_run=true', 'caf\u00e9', '{', 'Idempotency-Key must be 1 to 255 printable ASCII characters', 'invalid_idempotency_key'],
      ['a dry run with a key before invalid JSON', '?dry_run=true', 'order-1', '{', 'Idempotency-Key cannot be used with dry_run=true: a dry run writes nothing to replay', 'dry_run_with_idempotency_key'],
      ['invalid JSON before the rows', '', 'order-1', '{', 'Invalid JSON body', 'invalid_json'],
    ])('answers the first of several 400s: %s', async (_case, query, idempotencyKey, payload, error, code) => {
      before = await kit.snapshot();
      const res = await service.request({
        method: 'POST',
        url: `${kit.path}${query}`,
        headers: { ...bearer(key), 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
        payload,
      });
      await expectRefused(res, 400, { error, code });
    });

    const other = kind === 'machines' ? 'listings' : 'machines';
    it.each([
      ['null', 'null'],
      ['an array', JSON.stringify([row()])],
      ['a string', `"${kind}"`],
      ['a number', '42'],
      ['a boolean', 'true'],
      [`an object without ${kind}`, '{}'],
      [`${kind} null`, `{"${kind}": null}`],
      [`${kind} an object`, JSON.stringify({ [kind]: { 0: row() } })],
      [`${kind} a string`, `{"${kind}": "[]"}`],
      [`${kind} a number`, `{"${kind}": 3}`],
      [`rows under "${other}"`, JSON.stringify({ [other]: [row()] })],
      [`rows under a capitalised "${kind}"`, JSON.stringify({ [kind[0]!.toUpperCase() + kind.slice(1)]: [row()] })],
    ])('400 for a body that is %s', async (_case, body) => {
      before = await kit.snapshot();
      await expectRefused(await kit.postRaw(key, body), 400, { error: `Body must be an object with a "${kind}" array`, code: 'missing_rows_array' });
    });

    it('400 for an empty array', async () => {
      before = await kit.snapshot();
      await expectRefused(await kit.post(key, { [kind]: [] }), 400, { error: `No rows: send 1 to ${maxRows} ${kind}`, code: 'no_rows' });
    });

    it.each([maxRows + 1, maxRows * 2 + 100])('400 with received for %d rows, valid ones included', async (count) => {
      before = await kit.snapshot();
      const rows = Array.from({ length: count }, () => row());
      await expectRefused(await kit.post(key, { [kind]: rows }), 400, { error: `Too many rows: at most ${maxRows} ${kind} per request`, code: 'too_many_rows', received: count });
    });

    it('400 no valid rows when no row is even an object', async () => {
      before = await kit.snapshot();
      await expectRefused(await kit.post(key, { [kind]: [42, 'row', null] }), 400, {
        error: 'no valid rows',
        code: 'no_valid_rows',
        errors: [0, 1, 2].map((index) => rowError(index, 'row must be an object', 'not_an_object')),
      });
    });

    it(`413 for a body one byte over ${bodyLimitBytes.toLocaleString('en-US')} bytes, and 201 for one of exactly that size`, async () => {
      before = await kit.snapshot();
      await expectRefused(await kit.postRaw(key, bodyOfSize(kind, row(), bodyLimitBytes + 1)), 413, {
        error: 'Request body too large',
        code: 'body_too_large',
        limit_bytes: bodyLimitBytes,
      });
      const res = await kit.postRaw(key, bodyOfSize(kind, row(), bodyLimitBytes));
      expect(res.statusCode).toBe(201);
      expect(res.json()).toEqual({ inserted: 1, skipped: 0, errors: [], import_id: expect.any(String) });
    });
  });

  describe('security', () => {
    it.each([[['listings:read']], [['jobs:read', 'earnings:read', 'webhooks']]])('403 for a key with scopes %j, with the rate-limit headers, and nothing written', async (scopes) => {
      const { key } = await kit.partner({}, scopes);
      const before = await kit.snapshot();
      const res = await kit.post(key, { [kind]: [row()] });
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({ error: 'Missing required scope: listings_write', code: 'missing_scope' });
      expect(res.headers['x-ratelimit-limit-minute']).toBe('300');
      expect(await kit.snapshot()).toEqual(before);
    });

    it.each([
      ['invalid JSON', `{"${kind}": [`],
      ['an empty array', `{"${kind}": []}`],
      ['too many rows', JSON.stringify({ [kind]: Array.from({ length: maxRows + 1 }, () => row()) })],
      ['a body over the limit', bodyOfSize(kind, row(), bodyLimitBytes + 1)],
    ])('checks the scope before the body: 403, not 4xx, for %s', async (_case, body) => {
      const { key } = await kit.partner({}, ['listings:read']);
      const before = await kit.snapshot();
      const res = await kit.postRaw(key, body);
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({ error: 'Missing required scope: listings_write', code: 'missing_scope' });
      expect(await kit.snapshot()).toEqual(before);
    });

    it('keeps each account\'s rows to itself, whatever account_id a row names', async () => {
      const a = await kit.partner();
      const b = await kit.partner();
      const resA = await kit.post(a.key, { [kind]: [labelled('a-1'), { ...labelled('a-2'), account_id: b.account.id }, labelled('a-3')] });
      const resB = await kit.post(b.key, { [kind]: [labelled('b-1'), labelled('b-2')] });
      expect(resA.statusCode).toBe(201);
      expect(resB.statusCode).toBe(201);
      expect(await labelsOf(a.account)).toEqual(['a-1', 'a-2', 'a-3']);
      expect(await labelsOf(b.account)).toEqual(['b-1', 'b-2']);
      const importsB = await service.sql`select inserted from imports where account_id = ${b.account.id}`;
      expect(importsB.map((r) => r.inserted)).toEqual([2]);
    });

    it('writes rows sent with a second key of the same account to that account', async () => {
      const { account } = await kit.partner();
      const secondKey = await service.createKey(account, ['listings_write'], 'second key');
      const res = await kit.post(secondKey, { [kind]: [labelled('via second key')] });
      expect(res.statusCode).toBe(201);
      expect(await labelsOf(account)).toEqual(['via second key']);
    });
  });

  it('carries the X-RateLimit-* headers and X-Request-Id on a 201, and records the request id with the import', async () => {
    const { account, key } = await kit.partner();
    const first = await kit.post(key, { [kind]: [row()] });
    const second = await kit.post(key, { [kind]: [row()] });
    for (const res of [first, second]) {
      expect(res.statusCode).toBe(201);
      expect(res.headers['x-ratelimit-limit-minute']).toBe('300');
      expect(res.headers['x-ratelimit-limit-day']).toBe('100000');
    }
    expect([first.headers['x-ratelimit-remaining-minute'], second.headers['x-ratelimit-remaining-minute']]).toEqual(['299', '298']);
    expect(second.headers['x-ratelimit-remaining-day']).toBe('99998');
    const requestIds = [first.headers['x-request-id'], second.headers['x-request-id']];
    expect(requestIds[0]).toEqual(expect.any(String));
    expect(requestIds[0]).not.toBe(requestIds[1]);
    const recorded = await service.sql`select request_id from imports where account_id = ${account.id}`;
    expect(recorded.map((r) => r.request_id).sort()).toEqual([...requestIds].sort());
  });
});
