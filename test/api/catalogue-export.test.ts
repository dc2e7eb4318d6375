import { get as httpGet, type IncomingMessage } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { createClient } from '@bulk-import/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/shared/access/api-key.js';
import { createKeyWithinCap } from '../../src/shared/repositories/api-keys.js';
import type { ImportKind } from '../../src/shared/import/import-kinds.js';
import { createFaultScenario, type FaultScenario } from '../support/fault-scenario.js';
import { runPartnerCli } from '../support/partner-cli.js';
import { spawnPart, type ApiProcess } from '../support/processes.js';

/**
 * `GET /v1/api/listings/export` and `/v1/api/machines/export` (docs/catalogue.md#export) against
 * a real API process: the whole catalogue in one streamed answer, one snapshot, one export per
 * account, a client that stops reading dropped with its database session.
 */

const IDLE_MS = 1_500;

/**
 * An export a client does not read must stay in PostgreSQL rather than in the sockets: a catalogue
 * larger than the kernel's buffers take (a receive buffer grows to 32 MB on Linux by default,
 * tcp_rmem, besides the sender's), some 80 MB of NDJSON.
 */
const HELD = { rows: 40_000, descriptionChars: 2_000 };

let scenario: FaultScenario;
let api: ApiProcess;

beforeAll(async () => {
  scenario = await createFaultScenario();
  api = await scenario.startApi({ EXPORT_IDLE_TIMEOUT_MS: String(IDLE_MS) });
});
afterAll(async () => {
  if (process.env.EXPORT_DEBUG) console.log(api.output.filter((line) => /export|error|warn/i.test(line)).join('\n'));
  await scenario?.close();
});

interface Partner {
  accountId: string;
  apiKey: string;
}

const headersOf = (key: string, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${key}`, ...extra });
const exportUrl = (kind: ImportKind, query = '') => `${api.baseUrl}/v1/api/${kind}/export${query}`;

/** `count` listings of the account written in SQL, each `descriptionChars` long; their ids. */
async function seedListings(accountId: string, count: number, descriptionChars = 200, title = (n: string) => `'Listing ' || ${n}`, externalIdPrefix = 'SKU-'): Promise<string[]> {
  const rows = await scenario.sql.unsafe<{ id: string }[]>(
    `insert into listings (account_id, external_id, title, description, price_cents, currency, category, material, photo_urls, thumbnail_url, tags, print_time_hours, maker_name)
     select $1, '${externalIdPrefix}' || n, ${title('n')}, repeat('d', ${descriptionChars}), n, 'USD', 'art', 'PLA',
            array['https://cdn.example.test/' || n || '.jpg', 'https://cdn.example.test/b.jpg'], 'https://cdn.example.test/' || n || '.jpg',
            array['tag,' || n, 'tab' || chr(9) || 'x'], case when n % 2 = 0 then 2.5 end, 'Seeder'
     from generate_series(1, ${count}) as n returning id`,
    [accountId],
  );
  return rows.map((row) => row.id).sort();
}

async function seedMachines(accountId: string, count: number): Promise<string[]> {
  const rows = await scenario.sql<{ id: string }[]>`
    insert into machines (account_id, external_id, template_id, category, manufacturer, model, capabilities, nickname)
    select ${accountId}, 'M-' || n, 'tpl-' || n, 'fdm', 'Prusa Research', 'MK4', array['pla', 'petg'], case when n % 2 = 0 then 'Bench ' || n end
    from generate_series(1, ${count}) as n returning id`;
  return rows.map((row) => row.id).sort();
}

async function newPartner(): Promise<Partner> {
  const { accountId, apiKey } = await scenario.addPartner(`Export ${Math.random().toString(16).slice(2, 8)}`);
  return { accountId, apiKey };
}

/** Every row the list answers, page by page, as parsed. */
async function listed(key: string, kind: ImportKind, query = ''): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  for (let after = ''; ;) {
    const res = await fetch(`${api.baseUrl}/v1/api/${kind}?limit=100${query}${after}`, { headers: headersOf(key) });
    expect(res.status).toBe(200);
    const page = (await res.json()) as { data: Record<string, unknown>[]; has_more: boolean };
    rows.push(...page.data);
    if (!page.has_more) return rows;
    after = `&starting_after=${String(page.data.at(-1)!.id)}`;
  }
}

const ndjson = (text: string) => text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Record<string, unknown>);

/** An export opened with Node's http client, its body read by the test at its own pace. */
function openExport(url: string, key: string, extra: Record<string, string> = {}): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = httpGet(url, { headers: headersOf(key, extra) }, resolve);
    req.on('error', reject);
  });
}

/** Reads the whole body, pausing `pauseMs` after every `everyBytes`; and whether it ended whole. */
async function readSlowly(res: IncomingMessage, everyBytes: number, pauseMs: number, meanwhile?: () => Promise<void>): Promise<{ text: string; complete: boolean }> {
  const chunks: Buffer[] = [];
  let sinceBreak = 0;
  let first = true;
  try {
    for await (const chunk of res) {
      chunks.push(chunk as Buffer);
      if (first && meanwhile) await meanwhile();
      first = false;
      sinceBreak += (chunk as Buffer).length;
      if (sinceBreak >= everyBytes) {
        sinceBreak = 0;
        await new Promise((resolve) => setTimeout(resolve, pauseMs));
      }
    }
  } catch {
    return { text: Buffer.concat(chunks).toString('utf8'), complete: false };
  }
  return { text: Buffer.concat(chunks).toString('utf8'), complete: res.complete };
}

/** The database sessions of the API that are in a transaction or running a statement (not the test's own). */
async function busySessions(): Promise<{ state: string; query: string }[]> {
  return scenario.sql<{ state: string; query: string }[]>`
    select state, query from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'
      and (state <> 'idle' or query ilike 'copy%') and query not ilike '%pg_stat_activity%'`;
}

describe('GET /v1/api/listings/export and /v1/api/machines/export: the whole catalogue', () => {
  it.each<ImportKind>(['listings', 'machines'])('answers every active %s of the account as NDJSON, each row as the list answers it, in id order', async (kind) => {
    const partner = await newPartner();
    const other = await newPartner();
    const seed = kind === 'listings' ? seedListings : seedMachines;
    const ids = await seed(partner.accountId, 250);
    await seed(other.accountId, 20);
    await scenario.sql.unsafe(`update ${kind} set archived_at = now() where id = $1`, [ids[3]!]);
    const res = await fetch(exportUrl(kind), { headers: headersOf(partner.apiKey) });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-ndjson');
    expect(res.headers.get('x-ratelimit-remaining-minute')).not.toBeNull();
    const rows = ndjson(await res.text());
    expect(rows.map((row) => row.id)).toEqual(ids.filter((id) => id !== ids[3]));
    expect(rows).toEqual(await listed(partner.apiKey, kind));
  });

  it('answers CSV with a header first, arrays as entries separated by |, null as an empty cell, and a cell that starts with = escaped', async () => {
    const partner = await newPartner();
    await seedListings(partner.accountId, 3, 10, (n) => `'=HYPERLINK("x") ' || ${n}`);
    const res = await fetch(exportUrl('listings', '?format=csv'), { headers: headersOf(partner.apiKey) });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    const lines = (await res.text()).trimEnd().split('\n');
    expect(lines[0]).toBe(
      'id,external_id,title,description,currency,price_cents,category,material,photo_urls,color,tags,print_time_hours,is_available,allows_custom_orders,thumbnail_url,maker_name,maker_photo_url,created_at,updated_at,archived_at',
    );
    expect(lines).toHaveLength(4);
    const [first] = await listed(partner.apiKey, 'listings');
    // note: rows written by one statement need not get their ids in its order
    const n = Number(String(first!.external_id).slice('SKU-'.length));
    expect(lines[1]).toBe(
      [
        first!.id,
        `SKU-${n}`,
        `"'=HYPERLINK(""x"") ${n}"`,
        'dddddddddd',
        'USD',
        String(n),
        'art',
        'PLA',
        `https://cdn.example.test/${n}.jpg|https://cdn.example.test/b.jpg`,
        '',
        `"tag,${n}|tab\tx"`,
        n % 2 === 0 ? '2.5' : '',
        'true',
        'false',
        `https://cdn.example.test/${n}.jpg`,
        'Seeder',
        '',
        first!.created_at,
        first!.updated_at,
        '',
      ].join(','),
    );
  });

  it('passes text of any language through as stored, in NDJSON and in CSV, whatever batch it falls in', async () => {
    const partner = await newPartner();
    // note: titles of two, three and four bytes a character, and descriptions long enough that
    // rows cross the export's 64 KiB batches, some with a quote and a line break beside them
    const title = (n: string) => `'Drache ' || ${n} || ' — Σφίγγα «дракон» 龍 🐉 "q"' || E'\\n' || 'é'`;
    await seedListings(partner.accountId, 300, 700, title);
    const rows = ndjson(await (await fetch(exportUrl('listings'), { headers: headersOf(partner.apiKey) })).text());
    const expected = await listed(partner.apiKey, 'listings');
    expect(rows).toHaveLength(300);
    expect(rows).toEqual(expected);
    expect(String(rows[0]!.title)).toMatch(/^Drache \d+ — Σφίγγα «дракон» 龍 🐉 "q"\né$/);
    const csv = await (await fetch(exportUrl('listings', '?format=csv'), { headers: headersOf(partner.apiKey) })).text();
    for (const row of expected) expect(csv).toContain(`"${String(row.title).replaceAll('"', '""')}"`);
  });

  it('filters as the list does: archived=true, updated_since, and both', async () => {
    const partner = await newPartner();
    const ids = await seedListings(partner.accountId, 40);
    await scenario.sql`update listings set created_at = now() - interval '2 days' where account_id = ${partner.accountId}`;
    await scenario.sql`update listings set archived_at = now(), updated_at = now() where id = any(${ids.slice(0, 5)}::uuid[])`;
    await scenario.sql`update listings set updated_at = now() where id = any(${ids.slice(30, 33)}::uuid[])`;
    const since = new Date(Date.now() - 3_600_000).toISOString();
    for (const query of ['?archived=true', `?updated_since=${since}`, `?archived=true&updated_since=${since}`, '?archived=false']) {
      const res = await fetch(exportUrl('listings', query), { headers: headersOf(partner.apiKey) });
      expect(res.status, query).toBe(200);
      expect(ndjson(await res.text()).map((row) => row.id), query).toEqual((await listed(partner.apiKey, 'listings', `&${query.slice(1)}`)).map((row) => row.id));
    }
    const archived = ndjson(await (await fetch(exportUrl('listings', '?archived=true'), { headers: headersOf(partner.apiKey) })).text());
    expect(archived.map((row) => row.id)).toEqual(ids.slice(0, 5));
    const changed = ndjson(await (await fetch(exportUrl('listings', `?updated_since=${since}`), { headers: headersOf(partner.apiKey) })).text());
    expect(changed.map((row) => row.id)).toEqual(ids.slice(30, 33));
  });

  it('compresses with gzip when the client accepts it, and not otherwise', async () => {
    const partner = await newPartner();
    await seedListings(partner.accountId, 300);
    const plain = await openExport(exportUrl('listings'), partner.apiKey, { 'accept-encoding': 'identity' });
    expect(plain.headers['content-encoding']).toBeUndefined();
    const plainText = (await readSlowly(plain, Infinity, 0)).text;
    const zipped = await openExport(exportUrl('listings'), partner.apiKey, { 'accept-encoding': 'gzip' });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.headers.vary).toMatch(/accept-encoding/i);
    const chunks: Buffer[] = [];
    for await (const chunk of zipped) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    expect(body.length).toBeLessThan(Buffer.byteLength(plainText) / 3);
    expect(gunzipSync(body).toString('utf8')).toBe(plainText);
    expect(ndjson(plainText)).toHaveLength(300);
  });
});

describe('the client package\'s exportRows', () => {
  it('yields every row of the export as the list answers it, gzip on the wire, a row at a time', async () => {
    const partner = await newPartner();
    await seedMachines(partner.accountId, 1_200);
    const client = createClient({ baseUrl: api.baseUrl, apiKey: partner.apiKey });
    const rows = [];
    for await (const row of client.exportRows('machines')) rows.push(row);
    expect(rows).toEqual(await listed(partner.apiKey, 'machines'));
  });
});

describe('the partner CLI\'s export', () => {
  it.each([
    ['NDJSON', [], (text: string) => ndjson(text).map((row) => row.id)],
    ['CSV', ['--csv'], (text: string) => text.trimEnd().split('\n').slice(1).map((line) => line.slice(0, line.indexOf(',')))],
  ] as const)('writes the whole catalogue to stdout as %s', async (_name, flags, idsOf) => {
    const partner = await newPartner();
    const ids = await seedMachines(partner.accountId, 700);
    const run = await runPartnerCli(['machines', 'export', ...flags, '--base-url', api.baseUrl], { BULK_IMPORT_API_KEY: partner.apiKey });
    expect(run.code, run.stderr).toBe(0);
    expect(idsOf(run.stdout)).toEqual(ids);
  });
});

describe('GET /v1/api/listings/export: refusals', () => {
  it.each([
    ['?limit=10', 'unknown_query_parameter', 'Unknown query parameter: limit'],
    ['?external_id=SKU-1', 'unknown_query_parameter', 'Unknown query parameter: external_id'],
    ['?format=xml', 'invalid_export_format', 'format must be ndjson or csv'],
    ['?archived=yes', 'invalid_archived', 'archived must be true or false'],
    ['?updated_since=yesterday', 'invalid_updated_since', 'updated_since must be an ISO 8601 date and time with a time zone, e.g. 2026-11-24T02:00:00Z'],
  ])('refuses %s: 400 %s', async (query, code, error) => {
    const res = await fetch(exportUrl('listings', query), { headers: headersOf(scenario.apiKey) });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error, code });
  });

  it('refuses a key with neither listings:read nor listings:write: 403 naming listings_read', async () => {
    const key = generateApiKey();
    await createKeyWithinCap(scenario.sql, { accountId: scenario.accountId, label: 'jobs only', scopes: ['jobs:read'], keyPrefix: key.prefix, keyHash: key.hash });
    const res = await fetch(exportUrl('machines'), { headers: headersOf(key.fullKey) });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ error: 'Missing required scope: listings_read', code: 'missing_scope' });
  });

  it('answers a key with listings:read alone', async () => {
    const key = generateApiKey();
    await createKeyWithinCap(scenario.sql, { accountId: scenario.accountId, label: 'read only', scopes: ['listings:read'], keyPrefix: key.prefix, keyHash: key.hash });
    const res = await fetch(exportUrl('machines'), { headers: headersOf(key.fullKey) });
    expect(res.status).toBe(200);
    await res.text();
  });
});

describe('GET /v1/api/listings/export: one snapshot, streamed', () => {
  it('is one snapshot of a catalogue written meanwhile: no row twice, none missing, none added, none changed', async () => {
    const partner = await newPartner();
    const before = await seedListings(partner.accountId, 4_000, 1_000);
    const res = await openExport(exportUrl('listings'), partner.apiKey);
    const { text, complete } = await readSlowly(res, 256 * 1024, 30, async () => {
      // note: once the first bytes came, the export's snapshot is taken: all of this is after it
      await seedListings(partner.accountId, 500, 10, undefined, 'NEW-');
      await scenario.sql`delete from listings where id = any(${before.slice(100, 200)}::uuid[])`;
      await scenario.sql`update listings set title = 'Changed meanwhile', updated_at = now() where id = any(${before.slice(3_000, 3_100)}::uuid[])`;
    });
    expect(complete).toBe(true);
    const rows = ndjson(text);
    expect(rows.map((row) => row.id)).toEqual(before);
    expect(rows.filter((row) => row.title === 'Changed meanwhile')).toEqual([]);
    const [written] = await scenario.sql<{ count: number }[]>`select count(*)::int from listings where account_id = ${partner.accountId}`;
    expect(written?.count).toBe(4_000 + 500 - 100);
  });

  it('gives a slow reader everything, however long it takes, as long as it keeps reading', async () => {
    const partner = await newPartner();
    const ids = await seedListings(partner.accountId, 3_000, 1_000);
    const started = Date.now();
    const { text, complete } = await readSlowly(await openExport(exportUrl('listings'), partner.apiKey), 64 * 1024, 40);
    expect(complete).toBe(true);
    expect(Date.now() - started).toBeGreaterThan(IDLE_MS);
    expect(ndjson(text).map((row) => row.id)).toEqual(ids);
  });

  it('drops a client that reads nothing for EXPORT_IDLE_TIMEOUT_MS, ends its database session, and frees the account\'s export', async () => {
    const partner = await newPartner();
    await seedListings(partner.accountId, HELD.rows, HELD.descriptionChars);
    const res = await openExport(exportUrl('listings'), partner.apiKey);
    res.pause();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await busySessions()).length).toBeGreaterThan(0);
    const pausedAt = Date.now();
    await expect.poll(busySessions, { timeout: IDLE_MS + 5_000, interval: 100 }).toEqual([]);
    expect(Date.now() - pausedAt).toBeGreaterThanOrEqual(IDLE_MS - 400);
    // note: a paused socket learns of its close only when read again: what it holds, then the cut
    const { text, complete } = await readSlowly(res, Infinity, 0);
    expect(complete).toBe(false);
    expect(ndjson(text.slice(0, text.lastIndexOf('\n') + 1)).length).toBeLessThan(HELD.rows);
    const again = await fetch(exportUrl('listings', '?archived=true'), { headers: headersOf(partner.apiKey) });
    expect(again.status).toBe(200);
    await again.text();
  });

  it('refuses a second export of the account while one runs: 429 too_many_exports with Retry-After; another account is not held up; once the first ends, a new one runs', async () => {
    const partner = await newPartner();
    const ids = await seedListings(partner.accountId, HELD.rows, HELD.descriptionChars);
    const first = await openExport(exportUrl('listings'), partner.apiKey);
    first.pause();
    const second = await fetch(exportUrl('machines'), { headers: headersOf(partner.apiKey) });
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toBe('10');
    expect(await second.json()).toEqual({ error: 'An export of this account is already running', code: 'too_many_exports', retry_after_sec: 10 });
    const other = await fetch(exportUrl('listings'), { headers: headersOf(scenario.apiKey) });
    expect(other.status).toBe(200);
    await other.text();
    const { text, complete } = await readSlowly(first, Infinity, 0);
    expect(complete).toBe(true);
    expect(ndjson(text).map((row) => row.id)).toEqual(ids);
    await expect
      .poll(async () => {
        const res = await fetch(exportUrl('machines'), { headers: headersOf(partner.apiKey) });
        await res.text();
        return res.status;
      }, { timeout: 3_000 })
      .toBe(200);
  });
});

describe('EXPORT_IDLE_TIMEOUT_MS', () => {
  it.each([['0'], ['999'], ['thirty'], ['86400001']])('refuses EXPORT_IDLE_TIMEOUT_MS=%j at the API\'s start, naming the variable', async (raw) => {
    const started = spawnPart('api', { ...scenario.env, PORT: '0', EXPORT_IDLE_TIMEOUT_MS: raw });
    const code = await started.exited;
    expect(code).not.toBe(0);
    expect(started.output.join('\n')).toMatch(/EXPORT_IDLE_TIMEOUT_MS: /);
  });
});

describe('EXPORT_POOL_MAX: the exports\' own connections', () => {
  it('streams an export on a connection of its own: the list answers while the only one of DATABASE_POOL_MAX is free, and an export beyond EXPORT_POOL_MAX is 503 overloaded with Retry-After, not a wait', async () => {
    const small = await scenario.startApi({ DATABASE_POOL_MAX: '1', EXPORT_POOL_MAX: '1', EXPORT_IDLE_TIMEOUT_MS: '60000' });
    try {
      const partner = await newPartner();
      const other = await newPartner();
      const ids = await seedListings(partner.accountId, HELD.rows, HELD.descriptionChars);
      await seedListings(other.accountId, 10);
      const first = await openExport(`${small.baseUrl}/v1/api/listings/export`, partner.apiKey);
      first.pause();
      await expect.poll(async () => (await busySessions()).length, { timeout: 3_000 }).toBeGreaterThan(0);
      const list = await fetch(`${small.baseUrl}/v1/api/listings?limit=5`, { headers: headersOf(other.apiKey), signal: AbortSignal.timeout(5_000) });
      expect(list.status).toBe(200);
      await list.text();
      const beyond = await fetch(`${small.baseUrl}/v1/api/listings/export`, { headers: headersOf(other.apiKey), signal: AbortSignal.timeout(5_000) });
      expect(beyond.status).toBe(503);
      expect(beyond.headers.get('retry-after')).not.toBeNull();
      expect(await beyond.json()).toMatchObject({ error: 'Service overloaded, retry shortly', code: 'overloaded' });
      const { text, complete } = await readSlowly(first, Infinity, 0);
      expect(complete).toBe(true);
      expect(ndjson(text).map((row) => row.id)).toEqual(ids);
      // note: the refused export held neither its account's export nor a connection: both run now
      await expect
        .poll(async () => {
          const res = await fetch(`${small.baseUrl}/v1/api/listings/export`, { headers: headersOf(other.apiKey) });
          return res.status === 200 ? ndjson(await res.text()).length : res.status;
        }, { timeout: 3_000 })
        .toBe(10);
    } finally {
      await small.stop('SIGTERM');
    }
  });

  it.each([['0'], ['101'], ['two']])('refuses EXPORT_POOL_MAX=%j at the API\'s start, naming the variable', async (raw) => {
    const started = spawnPart('api', { ...scenario.env, PORT: '0', EXPORT_POOL_MAX: raw });
    const code = await started.exited;
    expect(code).not.toBe(0);
    expect(started.output.join('\n')).toMatch(/EXPORT_POOL_MAX: /);
  });
});
