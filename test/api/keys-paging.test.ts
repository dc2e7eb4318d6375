import { randomBytes, randomUUID } from 'node:crypto';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/fixtures.js';
import { documentValidator } from '../support/openapi-validator.js';
import { startTestService, type TestAccount, type TestService } from '../support/test-service.js';

interface KeyRecord {
  id: string;
  label: string;
  is_revoked: boolean;
}
interface KeyList {
  keys: KeyRecord[];
  has_more?: boolean;
}

/** A key written straight to the table: `tick` microseconds after a common instant. */
interface SeededKey {
  id: string;
  label: string;
  tick: number;
  revoked: boolean;
}

const LIMIT_REFUSED = { error: 'limit must be a whole number from 1 to 100', code: 'invalid_limit' };
const CURSOR_REFUSED = { error: 'starting_after: no such key', code: 'unknown_key_starting_after' };
const STATUS_REFUSED = { error: 'status must be active, expired, revoked or all', code: 'invalid_key_status' };

let service: TestService;

beforeAll(async () => {
  service = await startTestService({ worker: false });
});
afterAll(async () => {
  await service?.close();
});

/**
 * `revoked` + 1 keys written straight to the table (the active-key cap and a create per key would
 * only slow the test): the one active key is the oldest, so the plain list's 50 newest leave it out.
 * Three keys share each created_at, and all of them lie within one millisecond, so the order
 * rests on the id tie-break and on created_at's microseconds.
 */
async function seedKeys(account: TestAccount, revoked: number): Promise<SeededKey[]> {
  const keys: SeededKey[] = Array.from({ length: revoked + 1 }, (_, i) => ({
    id: randomUUID(),
    label: i === 0 ? 'the active one' : `revoked ${i}`,
    tick: Math.floor(i / 3),
    revoked: i !== 0,
  }));
  for (const key of keys) {
    await service.sql`
      insert into api_keys (id, account_id, label, key_prefix, key_hash, scopes, is_revoked, revoked_at, created_at)
      values (${key.id}, ${account.id}, ${key.label}, ${randomBytes(4).toString('hex')}, ${randomBytes(32)}, ${['listings:write']},
              ${key.revoked}, ${key.revoked ? new Date() : null}, timestamptz '2026-11-20 10:00:00.000+00' + ${key.tick} * interval '1 microsecond')`;
  }
  return keys;
}

/** Newest first, ties by id: uuids compare in PostgreSQL as their hex text does. */
const newestFirst = (keys: SeededKey[]) => [...keys].sort((a, b) => b.tick - a.tick || (a.id < b.id ? 1 : -1)).map((k) => k.id);

function list(account: TestAccount, query = '') {
  return service.request({ method: 'GET', url: `/v1/api/keys${query}`, headers: bearer(account.sessionToken) });
}

async function listed(account: TestAccount, query = ''): Promise<KeyList> {
  const res = await list(account, query);
  expect(res.statusCode, res.body).toBe(200);
  return res.json<KeyList>();
}

/** Every page of `query` from the first, following `starting_after` while `has_more`. */
async function allPages(account: TestAccount, query: string): Promise<KeyList[]> {
  const pages: KeyList[] = [];
  let after = '';
  for (;;) {
    const page = await listed(account, `?${query}${after}`);
    pages.push(page);
    if (!page.has_more) return pages;
    expect(page.keys.length).toBeGreaterThan(0);
    after = `&starting_after=${page.keys.at(-1)!.id}`;
    expect(pages.length).toBeLessThan(100);
  }
}

describe('GET /v1/api/keys with 53 revoked keys and 1 active', () => {
  let account: TestAccount;
  let seeded: SeededKey[];
  let order: string[];

  beforeAll(async () => {
    account = await service.createAccount();
    seeded = await seedKeys(account, 53);
    order = newestFirst(seeded);
  });

  it('orders the seeded keys as PostgreSQL does (the test\'s own expectation is sound)', async () => {
    const rows = await service.sql<{ id: string }[]>`select id from api_keys where account_id = ${account.id} order by created_at desc, id desc`;
    expect(rows.map((r) => r.id)).toEqual(order);
  });

  it('answers no parameter with the plain list, unchanged: {keys} alone, the 50 newest, revoked included, the active one out of sight', async () => {
    const body = await listed(account);
    expect(Object.keys(body)).toEqual(['keys']);
    expect(body.keys.map((k) => k.id)).toEqual(order.slice(0, 50));
    expect(body.keys.every((k) => k.is_revoked)).toBe(true);
    expect(body.keys.map((k) => k.label)).not.toContain('the active one');
  });

  it('answers an empty query string as no parameter', async () => {
    expect(Object.keys(await listed(account, '?'))).toEqual(['keys']);
  });

  it('shows the active key with ?status=active, and says nothing more follows', async () => {
    const body = await listed(account, '?status=active');
    expect(body).toMatchObject({ has_more: false });
    expect(body.keys.map((k) => [k.label, k.is_revoked])).toEqual([['the active one', false]]);
    expect(body.keys[0]!.id).toBe(seeded[0]!.id);
  });

  it('shows only revoked keys with ?status=revoked, 50 of 53, with more to follow', async () => {
    const body = await listed(account, '?status=revoked');
    expect(body.has_more).toBe(true);
    expect(body.keys.map((k) => k.id)).toEqual(order.filter((id) => id !== seeded[0]!.id).slice(0, 50));
  });

  it('answers ?status=all as the default list, with has_more', async () => {
    const body = await listed(account, '?status=all');
    expect(body.keys.map((k) => k.id)).toEqual(order.slice(0, 50));
    expect(body.has_more).toBe(true);
  });

  it.each([1, 7, 50, 53, 100])('pages through all 54 keys with limit=%i: each once, in order, has_more false on the last page only', async (limit) => {
    const pages = await allPages(account, `limit=${limit}`);
    expect(pages.flatMap((p) => p.keys.map((k) => k.id))).toEqual(order);
    expect(pages.map((p) => p.has_more)).toEqual([...pages.slice(1).map(() => true), false]);
    expect(pages.every((p) => p.keys.length <= limit)).toBe(true);
    expect(pages).toHaveLength(Math.ceil(54 / limit));
  });

  it('pages through the revoked keys, 53 in all', async () => {
    const pages = await allPages(account, 'status=revoked&limit=10');
    expect(pages.flatMap((p) => p.keys.map((k) => k.id))).toEqual(order.filter((id) => id !== seeded[0]!.id));
  });

  it('says has_more true at limit=53 and false at limit=54', async () => {
    expect((await listed(account, '?limit=53')).has_more).toBe(true);
    const all = await listed(account, '?limit=54');
    expect(all.has_more).toBe(false);
    expect(all.keys).toHaveLength(54);
  });

  it('answers an empty page after the oldest key', async () => {
    expect(await listed(account, `?starting_after=${order.at(-1)}`)).toEqual({ keys: [], has_more: false });
  });

  it('takes a cursor of another status: a revoked key as starting_after of ?status=active', async () => {
    const newestRevoked = order[0]!;
    const body = await listed(account, `?status=active&starting_after=${newestRevoked}`);
    expect(body.keys.map((k) => k.label)).toEqual(['the active one']);
  });

  it('reads ?status=active from the partial index of active keys (migration 0011), not through the revoked ones', async () => {
    // note: sequential scans off, as on a table too large to read whole: the index the planner
    // then picks for the statement's shape is the one it takes on a large table.
    const plan = await service.sql.begin(async (tx) => {
      await tx`set local enable_seqscan = off`;
      const rows = await tx`
        explain (format json) select id from api_keys
        where account_id = ${account.id} and not is_revoked
        order by created_at desc, id desc limit 51`;
      return JSON.stringify(rows);
    });
    expect(plan).toContain('"Index Name":"api_keys_account_active_idx"');
    expect(plan).not.toContain('"Node Type":"Sort"');
  });

  it('keeps its place when a key of the page is revoked between two pages', async () => {
    const other = await service.createAccount();
    const keys = await seedKeys(other, 0);
    const created = [];
    for (const label of ['a', 'b', 'c']) created.push(await service.request({ method: 'POST', url: '/v1/api/keys', headers: bearer(other.sessionToken), payload: { label, scopes: ['jobs:read'] } }));
    const ids = created.map((res) => res.json<{ metadata: { id: string } }>().metadata.id);
    const first = await listed(other, '?status=active&limit=2');
    expect(first.keys.map((k) => k.id)).toEqual([ids[2], ids[1]]);
    expect((await service.request({ method: 'DELETE', url: `/v1/api/keys/${ids[1]}`, headers: bearer(other.sessionToken) })).statusCode).toBe(200);
    const second = await listed(other, `?status=active&limit=2&starting_after=${ids[1]}`);
    expect(second).toEqual({ keys: [expect.objectContaining({ id: ids[0] }), expect.objectContaining({ id: keys[0]!.id })], has_more: false });
  });
});

describe('GET /v1/api/keys refusing its query', () => {
  let account: TestAccount;
  let othersKeyId: string;

  beforeAll(async () => {
    account = await service.createAccount();
    await seedKeys(account, 2);
    const other = await service.createAccount();
    othersKeyId = (await seedKeys(other, 0))[0]!.id;
  });

  it.each<[string, string, object]>([
    ['limit 0', '?limit=0', LIMIT_REFUSED],
    ['limit 101', '?limit=101', LIMIT_REFUSED],
    ['limit not a number', '?limit=ten', LIMIT_REFUSED],
    ['limit a fraction', '?limit=1.5', LIMIT_REFUSED],
    ['limit empty', '?limit=', LIMIT_REFUSED],
    ['limit twice', '?limit=5&limit=6', LIMIT_REFUSED],
    ['starting_after not a key id', '?starting_after=not-a-key', CURSOR_REFUSED],
    ['starting_after a key prefix', '?starting_after=deadbeef', CURSOR_REFUSED],
    ['starting_after an unknown uuid', `?starting_after=${randomUUID()}`, CURSOR_REFUSED],
    ['status unknown', '?status=rolled', STATUS_REFUSED],
    ['status in capitals', '?status=ACTIVE', STATUS_REFUSED],
    ['status empty', '?status=', STATUS_REFUSED],
    ['another parameter', '?active=true', { error: 'Unknown query parameter: active', code: 'unknown_query_parameter' }],
    ['a parameter in another case', '?Limit=5', { error: 'Unknown query parameter: Limit', code: 'unknown_query_parameter' }],
    ['another parameter beside good ones', '?limit=5&page=2', { error: 'Unknown query parameter: page', code: 'unknown_query_parameter' }],
  ])('answers %s with 400', async (_case, query, body) => {
    const res = await list(account, query);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(body);
  });

  it('answers another account\'s key id as starting_after with 400, naming no key of that account', async () => {
    const res = await list(account, `?starting_after=${othersKeyId}`);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(CURSOR_REFUSED);
    expect(res.body).not.toContain(othersKeyId);
  });

  it('authenticates first: a bad query without a session token is 401', async () => {
    const res = await service.request({ method: 'GET', url: '/v1/api/keys?limit=0&bogus=1', remoteAddress: '10.77.0.1' });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ code: 'missing_session_token' });
  });
});

describe('GET /v1/api/keys paging, as the OpenAPI document shows it', () => {
  let doc: { paths: Record<string, Record<string, { parameters?: { name: string; in: string }[]; responses: Record<string, { content: Record<string, { examples: Record<string, { value: unknown }> }> }> }>> };
  let ajv: Ajv2020;

  beforeAll(async () => {
    doc = (await service.request({ method: 'GET', url: '/v1/openapi.json' })).json();
    ajv = documentValidator(doc);
  });

  function expectDocumented(res: LightMyRequestResponse): void {
    const status = String(res.statusCode);
    const response = doc.paths['/v1/api/keys']!.get!.responses[status];
    expect(response, status).toBeDefined();
    const validate = ajv.compile({ $ref: `openapi#/paths/~1v1~1api~1keys/get/responses/${status}/content/application~1json/schema` });
    expect(validate(res.json()), JSON.stringify(validate.errors)).toBe(true);
    if (res.statusCode >= 400) {
      const shown = Object.values(response!.content['application/json']!.examples).map((e) => (e.value as { error: string }).error);
      expect(shown).toContain(res.json<{ error: string }>().error);
    }
  }

  it('documents limit, starting_after and status as query parameters', () => {
    const parameters = doc.paths['/v1/api/keys']!.get!.parameters ?? [];
    expect(parameters.filter((p) => p.in === 'query').map((p) => p.name).sort()).toEqual(['limit', 'starting_after', 'status']);
  });

  it('matches the answers: the plain list, a page, each 400', async () => {
    const account = await service.createAccount();
    const [key] = await seedKeys(account, 3);
    const responses = [
      await list(account),
      await list(account, '?status=active&limit=1'),
      await list(account, `?starting_after=${key!.id}`),
      await list(account, '?limit=500'),
      await list(account, `?starting_after=${randomUUID()}`),
      await list(account, '?status=gone'),
      await list(account, '?active=true'),
    ];
    expect(responses.map((r) => r.statusCode)).toEqual([200, 200, 200, 400, 400, 400, 400]);
    for (const res of responses) expectDocumented(res);
  });
});
