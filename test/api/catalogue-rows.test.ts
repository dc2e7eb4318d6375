import { randomUUID } from 'node:crypto';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ImportKind } from '../../src/shared/import/import-kinds.js';
import { setAccountTier } from '../../src/shared/repositories/accounts.js';
import { newPartner, postBulk } from '../support/bulk-endpoint.js';
import { bearer, validListing, validMachine } from '../support/fixtures.js';
import { documentValidator } from '../support/openapi-validator.js';
import { startTestService, type TestAccount, type TestService } from '../support/test-service.js';

/**
 * `GET /v1/api/listings`, `/v1/api/listings/{id}` and the same under `machines`
 * (docs/catalogue.md#reading-rows-back): an account's rows read back as stored, through the app,
 * on a real database.
 */

type Row = Record<string, unknown> & { id: string; external_id: string | null; created_at: string; updated_at: string; archived_at: string | null };
interface RowPage {
  data: Row[];
  has_more: boolean;
}

const KINDS: ImportKind[] = ['listings', 'machines'];
const NOT_FOUND = { listings: { error: 'Listing not found', code: 'listing_not_found' }, machines: { error: 'Machine not found', code: 'machine_not_found' } };

/** What a partner can compare of two answers: the status, the body and which headers came. */
const shapeOf = (res: LightMyRequestResponse) => ({ status: res.statusCode, body: res.body, headers: Object.keys(res.headers).sort() });

let service: TestService;

beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service?.close();
});

const get = (key: string, url: string) => service.request({ method: 'GET', url, headers: bearer(key) });

async function page(key: string, kind: ImportKind, query = ''): Promise<RowPage> {
  const res = await get(key, `/v1/api/${kind}${query}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json<RowPage>();
}

/** `count` rows of the account written straight to the table (an import per row would only be slower); their ids in id order. */
async function seed(kind: ImportKind, accountId: string, count: number, externalIdPrefix?: string): Promise<string[]> {
  // note: the column n of the series below
  const externalId = externalIdPrefix === undefined ? service.sql`null` : service.sql`${externalIdPrefix}::text || n`;
  const rows =
    kind === 'listings'
      ? await service.sql<{ id: string }[]>`
          insert into listings (account_id, external_id, title, description, price_cents, currency, category, material, photo_urls, thumbnail_url, maker_name)
          select ${accountId}, ${externalId}, 'Seeded ' || n, 'A seeded listing.', n, 'USD', 'art', 'PLA',
                 array['https://cdn.example.test/' || n || '.jpg'], 'https://cdn.example.test/' || n || '.jpg', 'Seeder'
          from generate_series(1, ${count}) as n
          returning id`
      : await service.sql<{ id: string }[]>`
          insert into machines (account_id, external_id, template_id, category, manufacturer, model)
          select ${accountId}, ${externalId}, 'tpl-' || n, 'fdm', 'Prusa Research', 'MK4'
          from generate_series(1, ${count}) as n
          returning id`;
  return rows.map((row) => row.id).sort();
}

/** Every page at `limit` from the first, following `starting_after` while `has_more`. */
async function allPages(key: string, kind: ImportKind, limit: number, query = ''): Promise<RowPage[]> {
  const pages: RowPage[] = [];
  for (let after = ''; ; ) {
    const next = await page(key, kind, `?limit=${limit}${query}${after}`);
    pages.push(next);
    if (!next.has_more) return pages;
    after = `&starting_after=${next.data.at(-1)!.id}`;
    expect(pages.length).toBeLessThan(1_000);
  }
}

const idsOf = (pages: RowPage[]) => pages.flatMap((p) => p.data.map((row) => row.id));

describe('GET /v1/api/listings/{id} and /v1/api/machines/{id}: the row as stored', () => {
  it('answers a listing imported with every field: trimmed, truncated and capped as stored, the maker and thumbnail added', async () => {
    const { account, key } = await newPartner(service, { name: 'Northern Prints', avatarUrl: 'https://cdn.example.test/northern.png' });
    const photos = Array.from({ length: 9 }, (_, i) => `https://cdn.example.test/p${i}.jpg`);
    const row = validListing({
      external_id: '  SKU-FULL  ',
      title: `  ${'T'.repeat(130)}  `,
      description: 'd'.repeat(2_100),
      price_cents: 4_250,
      category: 'gadgets',
      material: ' PETG ',
      photo_urls: photos,
      color: ' Forest green ',
      tags: Array.from({ length: 12 }, (_, i) => `tag-${i}`),
      print_time_hours: 6.5,
      is_available: false,
      allows_custom_orders: true,
    });
    expect((await postBulk(service, 'listings', key, { listings: [row] })).statusCode).toBe(201);
    const [stored] = await service.sql<{ id: string; created_at: Date }[]>`select id, created_at from listings where account_id = ${account.id}`;
    const res = await get(key, `/v1/api/listings/${stored!.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      id: stored!.id,
      external_id: 'SKU-FULL',
      title: 'T'.repeat(120),
      description: 'd'.repeat(2_000),
      currency: 'USD',
      price_cents: 4_250,
      category: 'gadgets',
      material: 'PETG',
      photo_urls: photos.slice(0, 8),
      color: 'Forest green',
      tags: Array.from({ length: 10 }, (_, i) => `tag-${i}`),
      print_time_hours: 6.5,
      is_available: false,
      allows_custom_orders: true,
      thumbnail_url: photos[0],
      maker_name: 'Northern Prints',
      maker_photo_url: 'https://cdn.example.test/northern.png',
      created_at: stored!.created_at.toISOString(),
      updated_at: stored!.created_at.toISOString(),
      archived_at: null,
    });
    // the fields come in the resource's order, the row's own in the order of the import's
    expect(Object.keys(res.json<object>()).slice(0, 3)).toEqual(['id', 'external_id', 'title']);
  });

  it('answers a listing without its optional fields with null, [] and the defaults', async () => {
    const { account, key } = await newPartner(service, { avatarUrl: null });
    expect((await postBulk(service, 'listings', key, { listings: [validListing({ title: 'Plain' })] })).statusCode).toBe(201);
    const [stored] = await service.sql<{ id: string }[]>`select id from listings where account_id = ${account.id}`;
    const body = (await get(key, `/v1/api/listings/${stored!.id}`)).json<Row>();
    expect(body).toMatchObject({ external_id: null, color: null, tags: [], print_time_hours: null, is_available: true, allows_custom_orders: false, maker_photo_url: null });
    expect(body.updated_at).toBe(body.created_at);
  });

  it('answers a machine with every field and its verification_status', async () => {
    const { account, key } = await newPartner(service);
    const full = validMachine({ external_id: 'ASSET-1', model_number: 'MK4S', nickname: `  ${'n'.repeat(90)}`, capabilities: ['pla', 'petg'], is_skill_station: true });
    const bare = validMachine({ template_id: 'bare' });
    expect((await postBulk(service, 'machines', key, { machines: [full, bare] })).statusCode).toBe(201);
    await service.sql`update machines set verification_status = 'verified' where account_id = ${account.id} and external_id = 'ASSET-1'`;
    const rows = await service.sql<{ id: string; external_id: string | null; created_at: Date }[]>`
      select id, external_id, created_at from machines where account_id = ${account.id} order by external_id nulls last`;
    const one = await get(key, `/v1/api/machines/${rows[0]!.id}`);
    expect(one.statusCode).toBe(200);
    expect(one.json()).toEqual({
      id: rows[0]!.id,
      external_id: 'ASSET-1',
      template_id: full.template_id,
      category: 'fdm',
      manufacturer: 'Prusa Research',
      model: 'MK4',
      model_number: 'MK4S',
      nickname: 'n'.repeat(80),
      capabilities: ['pla', 'petg'],
      is_skill_station: true,
      verification_status: 'verified',
      created_at: rows[0]!.created_at.toISOString(),
      updated_at: rows[0]!.created_at.toISOString(),
      archived_at: null,
    });
    expect((await get(key, `/v1/api/machines/${rows[1]!.id}`)).json()).toMatchObject({
      external_id: null,
      model_number: null,
      nickname: null,
      capabilities: [],
      is_skill_station: false,
      verification_status: 'pending',
    });
    // and every row of a list carries it
    const statusOf = (id: string) => (id === rows[0]!.id ? 'verified' : 'pending');
    const inIdOrder = rows.map((r) => r.id).sort();
    expect((await page(key, 'machines')).data.map((m) => [m.id, m['verification_status']])).toEqual(inIdOrder.map((id) => [id, statusOf(id)]));
  });

  it('moves updated_at when an import changes the row, and shows an archived row with archived_at', async () => {
    const { account, key } = await newPartner(service);
    expect((await postBulk(service, 'listings', key, { listings: [validListing({ external_id: 'SKU-U', title: 'Before' })] })).statusCode).toBe(201);
    const [stored] = await service.sql<{ id: string }[]>`select id from listings where account_id = ${account.id}`;
    const before = (await get(key, `/v1/api/listings/${stored!.id}`)).json<Row>();
    expect(before.updated_at).toBe(before.created_at);
    expect((await postBulk(service, 'listings', key, { listings: [validListing({ external_id: 'SKU-U', title: 'After' })] })).json()).toMatchObject({ updated: 1 });
    const after = (await get(key, `/v1/api/listings/${stored!.id}`)).json<Row>();
    expect(after).toMatchObject({ title: 'After', created_at: before.created_at, archived_at: null });
    expect(Date.parse(after.updated_at)).toBeGreaterThan(Date.parse(after.created_at));

    const [archived] = await service.sql<{ archived_at: Date }[]>`
      update listings set archived_at = now(), updated_at = now() where id = ${stored!.id} returning archived_at`;
    const res = await get(key, `/v1/api/listings/${stored!.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ title: 'After', archived_at: archived!.archived_at.toISOString(), updated_at: archived!.archived_at.toISOString() });
  });
});

describe.each(KINDS)('GET /v1/api/%s/{id}: who can read it', (kind) => {
  let owner: { account: TestAccount; key: string };
  let rowId: string;

  beforeAll(async () => {
    owner = await newPartner(service);
    [rowId] = (await seed(kind, owner.account.id, 1)) as [string];
  });

  it('answers another account\'s row, an unknown id and ids no row can have with the same 404: status, body and header names', async () => {
    const stranger = await newPartner(service);
    const unknown = await get(stranger.key, `/v1/api/${kind}/${randomUUID()}`);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual(NOT_FOUND[kind]);
    for (const id of [rowId, rowId.toUpperCase(), 'not-a-uuid', '%00', 'x'.repeat(64), '%E2%80%AE', `${rowId}0`, 'bulkx']) {
      const res = await get(stranger.key, `/v1/api/${kind}/${id}`);
      expect({ id, ...shapeOf(res) }).toEqual({ id, ...shapeOf(unknown) });
    }
    // the rate-limit headers are among them: the 404 comes after the key was counted
    expect(unknown.headers['x-ratelimit-remaining-minute']).toBeDefined();
    // while the owner reads it, by any spelling of its id
    expect((await get(owner.key, `/v1/api/${kind}/${rowId.toUpperCase()}`)).json()).toMatchObject({ id: rowId });
  });

  it('refuses a key with neither listings:read nor listings:write: 403 naming listings_read', async () => {
    const account = await service.createAccount();
    for (const scopes of [['jobs:read'], ['earnings:read', 'webhooks']]) {
      const key = await service.createKey(account, scopes);
      for (const url of [`/v1/api/${kind}`, `/v1/api/${kind}/${rowId}`]) {
        const res = await get(key, url);
        expect(res.statusCode, url).toBe(403);
        expect(res.json()).toEqual({ error: 'Missing required scope: listings_read', code: 'missing_scope' });
      }
    }
  });

  it('answers a key with listings:read alone, and one with listings:write alone, with the rate-limit headers', async () => {
    const readOnly = await service.createKey(owner.account, ['listings:read']);
    const writeOnly = await service.createKey(owner.account, ['listings:write']);
    for (const key of [readOnly, writeOnly]) {
      for (const url of [`/v1/api/${kind}`, `/v1/api/${kind}/${rowId}`]) {
        const res = await get(key, url);
        expect(res.statusCode, url).toBe(200);
        for (const header of ['x-ratelimit-limit-minute', 'x-ratelimit-remaining-minute', 'x-ratelimit-limit-day', 'x-ratelimit-remaining-day', 'ratelimit-policy', 'ratelimit']) {
          expect(res.headers[header], `${url} ${header}`).toBeDefined();
        }
      }
    }
  });

  it('refuses a query parameter on the one-row route: 400 naming it', async () => {
    const res = await get(owner.key, `/v1/api/${kind}/${rowId}?expand=all`);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'Unknown query parameter: expand', code: 'unknown_query_parameter' });
  });

  it('counts every answer against the account\'s limits, a 400 and a 404 too, as every API-key route', async () => {
    const { key } = await newPartner(service);
    const remaining = (res: LightMyRequestResponse) => Number(res.headers['x-ratelimit-remaining-minute']);
    const answers = [
      await get(key, `/v1/api/${kind}`),
      await get(key, `/v1/api/${kind}?limit=0`),
      await get(key, `/v1/api/${kind}/${randomUUID()}`),
      await get(key, `/v1/api/${kind}/${rowId}`),
    ];
    expect(answers.map((res) => res.statusCode)).toEqual([200, 400, 404, 404]);
    const counts = answers.map(remaining);
    expect(counts.slice(1)).toEqual([counts[0]! - 1, counts[0]! - 2, counts[0]! - 3]);
  });

  it('refuses an account off the API tiers (402) and a locked-out address (429), as every API-key route', async () => {
    const { account, key } = await newPartner(service);
    await setAccountTier(service.sql, account.id, 'pro');
    const tier = await get(key, `/v1/api/${kind}`);
    expect(tier.statusCode).toBe(402);
    expect(tier.json()).toMatchObject({ code: 'subscription_required' });

    const ip = `198.51.100.${KINDS.indexOf(kind) + 60}`;
    for (let i = 0; i < 20; i += 1) {
      const refused = await service.request({ method: 'GET', url: `/v1/api/${kind}`, headers: bearer(`svc_live_0123abcd_${randomUUID().replaceAll('-', '')}`), remoteAddress: ip });
      expect(refused.statusCode).toBe(401);
    }
    const locked = await service.request({ method: 'GET', url: `/v1/api/${kind}/${rowId}`, headers: bearer(owner.key), remoteAddress: ip });
    expect(locked.statusCode).toBe(429);
    expect(locked.json()).toMatchObject({ code: 'locked_out' });
    expect(locked.headers['retry-after']).toBeDefined();
  });

  it('needs a key: 401 without one', async () => {
    expect((await service.request({ method: 'GET', url: `/v1/api/${kind}/${rowId}` })).statusCode).toBe(401);
    expect((await service.request({ method: 'GET', url: `/v1/api/${kind}` })).statusCode).toBe(401);
  });
});

describe.each(KINDS)('GET /v1/api/%s: the list and its filters', (kind) => {
  let key: string;
  let account: TestAccount;
  let active: string[];
  let archived: string[];
  let othersId: string;

  beforeAll(async () => {
    ({ account, key } = await newPartner(service));
    const ids = await seed(kind, account.id, 30, 'EXT-');
    archived = ids.filter((_, i) => i % 5 === 2);
    active = ids.filter((id) => !archived.includes(id));
    await service.sql`update ${service.sql(kind)} set archived_at = now(), updated_at = now() where id = any(${archived}::uuid[])`;
    const other = await newPartner(service);
    [othersId] = (await seed(kind, other.account.id, 3, 'EXT-')) as [string];
  });

  it('lists the active rows by default, oldest first, 20 to a page', async () => {
    const first = await page(key, kind);
    expect(first.data.map((r) => r.id)).toEqual(active.slice(0, 20));
    expect(first.has_more).toBe(true);
    expect(first.data.every((r) => r.archived_at === null)).toBe(true);
    expect(await page(key, kind, '?archived=false')).toEqual(first);
  });

  it('lists only the archived rows with archived=true, in id order', async () => {
    const listed = await page(key, kind, '?archived=true&limit=100');
    expect(listed.data.map((r) => r.id)).toEqual(archived);
    expect(listed.has_more).toBe(false);
    expect(listed.data.every((r) => r.archived_at !== null)).toBe(true);
  });

  it.each([1, 2, 7, 24, 100])('pages through every active row once with limit=%i, has_more false on the last page only', async (limit) => {
    const pages = await allPages(key, kind, limit);
    expect(idsOf(pages)).toEqual(active);
    expect(pages.map((p) => p.has_more)).toEqual([...pages.slice(1).map(() => true), false]);
  });

  it('finds one row by its external_id, exactly (trimmed as an import trims it), and none for another account\'s or an unknown one', async () => {
    const externalIdOf = async (id: string) => (await service.sql<{ external_id: string }[]>`select external_id from ${service.sql(kind)} where id = ${id}`)[0]!.external_id;
    const index = active.length - 1;
    const wanted = await externalIdOf(active[index]!);
    expect((await page(key, kind, `?external_id=${wanted}`)).data.map((r) => r.id)).toEqual([active[index]]);
    expect((await page(key, kind, `?external_id=%20${wanted}%20%20`)).data.map((r) => r.id)).toEqual([active[index]]);
    expect((await page(key, kind, `?external_id=${wanted.toLowerCase()}`)).data).toEqual([]);
    expect((await page(key, kind, `?external_id=${wanted}-X`)).data).toEqual([]);
    // an archived row is found with archived=true, and only so
    const archivedId = await externalIdOf(archived[0]!);
    expect((await page(key, kind, `?external_id=${archivedId}`)).data).toEqual([]);
    expect((await page(key, kind, `?external_id=${archivedId}&archived=true`)).data.map((r) => r.id)).toEqual([archived[0]]);
    // EXT-1 is also another account's row: never listed here
    const theirs = await externalIdOf(othersId);
    const mine = (await page(key, kind, `?external_id=${theirs}&archived=true`)).data.concat((await page(key, kind, `?external_id=${theirs}`)).data);
    expect(mine.map((r) => r.id)).not.toContain(othersId);
    expect((await page(key, kind, '?external_id=NOPE')).data).toEqual([]);
  });

  it('continues after any well-formed id: a deleted row\'s, an archived row\'s, another account\'s or nobody\'s', async () => {
    const { account: own, key: ownKey } = await newPartner(service);
    const ids = await seed(kind, own.id, 10);
    await service.sql`delete from ${service.sql(kind)} where id = ${ids[3]!}`;
    await service.sql`update ${service.sql(kind)} set archived_at = now() where id = ${ids[6]!}`;
    const activeIds = ids.filter((_, i) => i !== 3 && i !== 6);
    const after = async (cursor: string) => (await page(ownKey, kind, `?limit=100&starting_after=${cursor}`)).data.map((r) => r.id);
    expect(await after(ids[3]!)).toEqual(activeIds.filter((id) => id > ids[3]!));
    expect(await after(ids[6]!)).toEqual(activeIds.filter((id) => id > ids[6]!));
    expect(await after(ids[6]!.toUpperCase())).toEqual(activeIds.filter((id) => id > ids[6]!));
    expect(await after(othersId)).toEqual(activeIds.filter((id) => id > othersId));
    expect(await after('00000000-0000-0000-0000-000000000000')).toEqual(activeIds);
    expect(await after('ffffffff-ffff-ffff-ffff-ffffffffffff')).toEqual([]);
  });
});

describe.each(KINDS)('GET /v1/api/%s?updated_since=', (kind) => {
  it('lists the rows created, changed, archived or restored at or after the time, and no other', async () => {
    const { account, key } = await newPartner(service);
    const ids = await seed(kind, account.id, 6);
    const at = (minutes: number) => service.sql`timestamptz '2026-11-20 10:00:00+00' + ${minutes} * interval '1 minute'`;
    // [0] created before, never changed; [1] created at the very instant; [2] created after;
    // [3] created before, changed after; [4] created before, archived after (active list: no;
    // archived list: yes); [5] created before, restored after (archived_at back to null).
    const table = service.sql(kind);
    await service.sql`update ${table} set created_at = ${at(-60)}, updated_at = null where id = ${ids[0]!}`;
    await service.sql`update ${table} set created_at = ${at(0)}, updated_at = null where id = ${ids[1]!}`;
    await service.sql`update ${table} set created_at = ${at(5)}, updated_at = null where id = ${ids[2]!}`;
    await service.sql`update ${table} set created_at = ${at(-60)}, updated_at = ${at(10)} where id = ${ids[3]!}`;
    await service.sql`update ${table} set created_at = ${at(-60)}, updated_at = ${at(20)}, archived_at = ${at(20)} where id = ${ids[4]!}`;
    await service.sql`update ${table} set created_at = ${at(-60)}, updated_at = ${at(30)}, archived_at = null where id = ${ids[5]!}`;

    const listed = async (query: string) => (await page(key, kind, `?limit=100&${query}`)).data.map((r) => r.id);
    expect(await listed('updated_since=2026-11-20T10:00:00Z')).toEqual([ids[1], ids[2], ids[3], ids[5]]);
    expect(await listed('updated_since=2026-11-20T10:00:00Z&archived=true')).toEqual([ids[4]]);
    // the same instant with an offset, and to the millisecond
    expect(await listed('updated_since=2026-11-20T12:00:00%2B02:00')).toEqual([ids[1], ids[2], ids[3], ids[5]]);
    expect(await listed('updated_since=2026-11-20T10:00:00.001Z')).toEqual([ids[2], ids[3], ids[5]]);
    expect(await listed('updated_since=2026-11-20T10:15:00Z')).toEqual([ids[5]]);
    expect(await listed('updated_since=2026-11-20T10:15:00Z&archived=true')).toEqual([ids[4]]);
    expect(await listed('updated_since=2026-11-20T10:31:00Z')).toEqual([]);
    expect(await listed('updated_since=0001-01-01T00:00:00Z')).toEqual([ids[0], ids[1], ids[2], ids[3], ids[5]]);
    // and it reads updated_at as the answer shows it: created_at until the row first changes
    const shown = (await page(key, kind, '?limit=100')).data;
    expect(shown.find((r) => r.id === ids[1])).toMatchObject({ created_at: '2026-11-20T10:00:00.000Z', updated_at: '2026-11-20T10:00:00.000Z' });
    expect(shown.find((r) => r.id === ids[3])).toMatchObject({ created_at: '2026-11-20T09:00:00.000Z', updated_at: '2026-11-20T10:10:00.000Z' });
    // paging keeps the filter
    const pages = await allPages(key, kind, 1, '&updated_since=2026-11-20T10:00:00Z');
    expect(idsOf(pages)).toEqual([ids[1], ids[2], ids[3], ids[5]]);
  });
});

describe.each(KINDS)('GET /v1/api/%s while the catalogue changes between pages', (kind) => {
  it.each([1, 3, 10])('lists every row that exists throughout exactly once, in id order (limit=%i)', async (limit) => {
    const { account, key } = await newPartner(service);
    const table = service.sql(kind);
    const initial = await seed(kind, account.id, 60);
    const touched = new Set<string>();
    const listed: string[] = [];
    let round = 0;
    for (let after = ''; ; round += 1) {
      const next = await page(key, kind, `?limit=${limit}${after}`);
      listed.push(...next.data.map((r) => r.id));
      if (!next.has_more) break;
      const cursor = next.data.at(-1)!.id;
      after = `&starting_after=${cursor}`;
      // between pages: a row ahead of the cursor deleted or archived (in turn), the cursor row
      // itself deleted or archived (every third round), a row behind it deleted (every fourth),
      // and new rows added (below)
      const ahead = initial.filter((id) => id > cursor && !touched.has(id));
      const behind = initial.filter((id) => id < cursor && !touched.has(id));
      const aheadOne = ahead[round % 3];
      const victims = [round % 2 === 0 ? aheadOne : undefined, round % 6 === 0 ? cursor : undefined, round % 4 === 0 ? behind[0] : undefined].filter((id): id is string => id !== undefined);
      const archivedNow = [round % 2 === 1 ? aheadOne : undefined, round % 6 === 3 ? cursor : undefined].filter((id): id is string => id !== undefined);
      for (const id of [...victims, ...archivedNow]) touched.add(id);
      await service.sql`delete from ${table} where id = any(${victims}::uuid[])`;
      await service.sql`update ${table} set archived_at = now(), updated_at = now() where id = any(${archivedNow}::uuid[])`;
      // note: one new row every third round, so that even pages of one row reach the end
      if (round % 3 === 2) await seed(kind, account.id, 1);
      expect(round).toBeLessThan(200);
    }
    const throughout = initial.filter((id) => !touched.has(id));
    expect(throughout.length).toBeGreaterThan(5);
    expect(touched.size).toBeGreaterThan(5);
    // each once, in id order
    expect(new Set(listed).size).toBe(listed.length);
    expect([...listed].sort()).toEqual(listed);
    for (const id of throughout) expect(listed.filter((l) => l === id)).toHaveLength(1);
  });
});

describe('GET /v1/api/listings and /machines: refusals name the parameter', () => {
  let key: string;

  beforeAll(async () => {
    ({ key } = await newPartner(service));
  });

  const LIMIT = { error: 'limit must be a whole number from 1 to 100', code: 'invalid_limit' };
  const CURSOR = { error: 'starting_after must be the id of a row (a UUID)', code: 'invalid_row_starting_after' };
  const EXTERNAL_ID = { error: 'external_id must be 1 to 100 printable characters', code: 'invalid_external_id' };
  const SINCE = { error: 'updated_since must be an ISO 8601 date and time with a time zone, e.g. 2026-11-24T02:00:00Z', code: 'invalid_updated_since' };
  const ARCHIVED = { error: 'archived must be true or false', code: 'invalid_archived' };

  const cases: [string, string, { error: string; code: string }][] = [
    ['limit 0', 'limit=0', LIMIT],
    ['limit 101', 'limit=101', LIMIT],
    ['limit 2.5', 'limit=2.5', LIMIT],
    ['limit abc', 'limit=abc', LIMIT],
    ['limit twice', 'limit=1&limit=2', LIMIT],
    ['an empty limit', 'limit=', LIMIT],
    ['a limit in exponent form', 'limit=1e1', LIMIT],
    ['a limit in hexadecimal', 'limit=0x10', LIMIT],
    ['a limit with a leading space', 'limit=%201', LIMIT],
    ['a limit with a trailing space', 'limit=1%20', LIMIT],
    ['a limit with a fraction of zero', 'limit=1.0', LIMIT],
    ['a limit with a sign', 'limit=%2B5', LIMIT],
    ['a limit with a leading zero', 'limit=05', LIMIT],
    ['a starting_after that is no UUID', 'starting_after=imp-1', CURSOR],
    ['a starting_after with a NUL', 'starting_after=%00', CURSOR],
    ['an empty starting_after', 'starting_after=', CURSOR],
    ['a UUID with one character too many', `starting_after=${randomUUID()}0`, CURSOR],
    ['an empty external_id', 'external_id=', EXTERNAL_ID],
    ['a blank external_id', 'external_id=%20%20', EXTERNAL_ID],
    ['an external_id of 101 characters', `external_id=${'x'.repeat(101)}`, EXTERNAL_ID],
    ['an external_id with a control character', 'external_id=a%1Bb', EXTERNAL_ID],
    ['an external_id with a NUL', 'external_id=a%00b', EXTERNAL_ID],
    ['external_id twice', 'external_id=a&external_id=b', EXTERNAL_ID],
    ['an updated_since in words', 'updated_since=yesterday', SINCE],
    ['an updated_since without a time', 'updated_since=2026-11-24', SINCE],
    ['an updated_since without a zone', 'updated_since=2026-11-24T02:00:00', SINCE],
    ['an updated_since on a day that does not exist', 'updated_since=2026-02-30T00:00:00Z', SINCE],
    ['an updated_since in year 0', 'updated_since=0000-01-01T00:00:00Z', SINCE],
    ['an updated_since as a number', 'updated_since=1732413600', SINCE],
    ['an updated_since in year 0001 that is year 0 in UTC', 'updated_since=0001-01-01T00:00:00%2B14:00', SINCE],
    ['an updated_since a millisecond into year 0001 that is year 0 in UTC', 'updated_since=0001-01-01T00:00:00.001%2B00:01', SINCE],
    ['an updated_since in year 9999 that is year 10000 in UTC', 'updated_since=9999-12-31T23:59:59-14:00', SINCE],
    ['an empty updated_since', 'updated_since=', SINCE],
    ['archived=yes', 'archived=yes', ARCHIVED],
    ['archived=TRUE', 'archived=TRUE', ARCHIVED],
    ['archived twice', 'archived=true&archived=false', ARCHIVED],
    ['an empty archived', 'archived=', ARCHIVED],
    ['an unknown parameter', 'status=archived', { error: 'Unknown query parameter: status', code: 'unknown_query_parameter' }],
    ['a misspelt one', 'startingAfter=x', { error: 'Unknown query parameter: startingAfter', code: 'unknown_query_parameter' }],
  ];

  it.each(cases)('answers %s with 400 naming it', async (_what, query, body) => {
    for (const kind of KINDS) {
      const res = await get(key, `/v1/api/${kind}?${query}`);
      expect(res.statusCode, `${kind}?${query}: ${res.body}`).toBe(400);
      expect(res.json()).toEqual(body);
      expect(res.headers['x-ratelimit-remaining-minute']).toBeDefined();
    }
  });
});

describe('the answers match the OpenAPI document', () => {
  let ajv: Ajv2020;
  const pointer = (...parts: string[]) => `#/${parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;

  beforeAll(async () => {
    ajv = documentValidator((await service.request({ method: 'GET', url: '/v1/openapi.json' })).json());
  });

  function expectDocumented(path: string, res: LightMyRequestResponse): void {
    const validate = ajv.compile({ $ref: `openapi${pointer('paths', path, 'get', 'responses', String(res.statusCode), 'content', 'application/json', 'schema')}` });
    expect(validate(res.json()), `${path} ${res.statusCode}: ${JSON.stringify(validate.errors)}`).toBe(true);
  }

  it.each(KINDS)('%s: 200 (a page, a row, archived or not), 400, 403 and 404', async (kind) => {
    const { account, key } = await newPartner(service, { avatarUrl: null });
    const row = kind === 'listings' ? validListing({ external_id: 'DOC-1', color: 'red', print_time_hours: 2 }) : validMachine({ external_id: 'DOC-1', nickname: 'n' });
    expect((await postBulk(service, kind, key, { [kind]: [row, kind === 'listings' ? validListing() : validMachine()] })).statusCode).toBe(201);
    const [first] = await service.sql<{ id: string }[]>`select id from ${service.sql(kind)} where account_id = ${account.id} order by id limit 1`;
    await service.sql`update ${service.sql(kind)} set archived_at = now() where id = ${first!.id}`;
    const readOnly = await service.createKey(account, ['jobs:read']);
    const checks: [string, LightMyRequestResponse, number][] = [
      [`/v1/api/${kind}`, await get(key, `/v1/api/${kind}`), 200],
      [`/v1/api/${kind}`, await get(key, `/v1/api/${kind}?archived=true`), 200],
      [`/v1/api/${kind}/{id}`, await get(key, `/v1/api/${kind}/${first!.id}`), 200],
      [`/v1/api/${kind}`, await get(key, `/v1/api/${kind}?limit=0`), 400],
      [`/v1/api/${kind}`, await get(readOnly, `/v1/api/${kind}`), 403],
      [`/v1/api/${kind}/{id}`, await get(key, `/v1/api/${kind}/nope`), 404],
    ];
    for (const [path, res, status] of checks) {
      expect(res.statusCode, res.body).toBe(status);
      expectDocumented(path, res);
    }
    // the document is strict: a row without one of its fields is no valid answer
    const { archived_at: _dropped, ...partial } = checks[2]![1].json<Row>();
    const validate = ajv.compile({ $ref: `openapi${pointer('paths', `/v1/api/${kind}/{id}`, 'get', 'responses', '200', 'content', 'application/json', 'schema')}` });
    expect(validate(partial)).toBe(false);
  });
});
