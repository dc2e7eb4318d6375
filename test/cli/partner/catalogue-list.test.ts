import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../../src/cli/partner/main.js';
import type { ImportKind } from '../../../src/shared/import/import-kinds.js';
import { newPartner, postBulk } from '../../support/bulk-endpoint.js';
import { startCliService, type CliService } from '../../support/cli-service.js';
import { bearer, validListing, validMachine } from '../../support/fixtures.js';
import { runPartnerCli } from '../../support/partner-cli.js';

type Row = Record<string, unknown> & { id: string };

/**
 * `bulk-import listings|machines list` (docs/partner-cli.md#reading-rows-back) against a real
 * service: what it prints is every row the API pages out, as the API answers it (NDJSON) or as
 * CSV, with the filters passed on.
 */
describe('bulk-import listings|machines list', () => {
  let cli: CliService;

  beforeAll(async () => {
    cli = await startCliService('bulk-import-catalogue-');
  });
  afterAll(async () => {
    await cli?.close();
  });

  const list = (key: string, kind: ImportKind, ...args: string[]) => runPartnerCli([kind, 'list', ...args], { BULK_IMPORT_API_KEY: key, BULK_IMPORT_BASE_URL: cli.baseUrl });

  /** Every row of the account the API lists with `query`, oldest first, every page. */
  async function allRows(key: string, kind: ImportKind, query = ''): Promise<Row[]> {
    const rows: Row[] = [];
    for (let after = ''; ; ) {
      const res = await cli.service.request({ method: 'GET', url: `/v1/api/${kind}?limit=100${query}${after}`, headers: bearer(key) });
      const page = res.json<{ data: Row[]; has_more: boolean }>();
      rows.push(...page.data);
      if (!page.has_more) return rows;
      after = `&starting_after=${page.data.at(-1)!.id}`;
    }
  }

  /** `count` listings of the account, imported through the API 200 at a time. */
  async function importListings(key: string, count: number, row: (n: number) => Record<string, unknown>): Promise<void> {
    for (let start = 0; start < count; start += 200) {
      const rows = Array.from({ length: Math.min(200, count - start) }, (_, i) => validListing(row(start + i)));
      expect((await postBulk(cli.service, 'listings', key, { listings: rows })).statusCode).toBe(201);
    }
  }

  const ndjson = (stdout: string) => stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as Row);

  it('prints every active listing, across pages, one JSON object a line as the API answers it', async () => {
    const { account, key } = await newPartner(cli.service);
    await importListings(key, 230, (n) => ({ external_id: `SKU-${n}` }));
    await cli.service.sql`update listings set archived_at = now(), updated_at = now() where account_id = ${account.id} and external_id in ('SKU-3', 'SKU-150')`;
    const expected = await allRows(key, 'listings');
    expect(expected).toHaveLength(228);

    const result = await list(key, 'listings');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    expect(ndjson(result.stdout)).toEqual(expected);

    const archived = await list(key, 'listings', '--archived');
    expect(archived.code).toBe(0);
    expect(ndjson(archived.stdout).map((r) => r['external_id']).sort()).toEqual(['SKU-150', 'SKU-3']);
    expect(ndjson(archived.stdout)).toEqual(await allRows(key, 'listings', '&archived=true'));
  });

  it('passes --external-id and --updated-since on, and says so on stderr when nothing matches', async () => {
    const { account, key } = await newPartner(cli.service);
    await importListings(key, 5, (n) => ({ external_id: `ID ${n}&x=1` }));
    const one = await list(key, 'listings', '--external-id', 'ID 3&x=1');
    expect(one.code, one.stderr).toBe(0);
    expect(ndjson(one.stdout).map((r) => r['external_id'])).toEqual(['ID 3&x=1']);

    await cli.service.sql`update listings set created_at = '2026-01-01T00:00:00Z', updated_at = null where account_id = ${account.id}`;
    await cli.service.sql`update listings set updated_at = '2026-06-01T00:00:00Z' where account_id = ${account.id} and external_id in ('ID 1&x=1', 'ID 4&x=1')`;
    const since = await list(key, 'listings', '--updated-since', '2026-05-31T23:00:00+02:00');
    expect(since.code, since.stderr).toBe(0);
    expect(ndjson(since.stdout).map((r) => r['external_id']).sort()).toEqual(['ID 1&x=1', 'ID 4&x=1']);

    const none = await list(key, 'listings', '--updated-since', '2026-06-02T00:00:00Z');
    expect(none).toEqual({ code: 0, stdout: '', stderr: 'note: no active listings of the account match\n' });
  });

  it('--format csv: a header of the fields, a line per row, arrays joined with |, null empty, quoted where needed', async () => {
    const { key } = await newPartner(cli.service, { avatarUrl: null });
    const rows = [
      { external_id: 'CSV-1', title: 'Plain', tags: ['a', 'b'], print_time_hours: 1.5 },
      { external_id: 'CSV-2', title: 'Comma, "quote"', description: 'Line one\nline two', color: 'red' },
      { external_id: 'CSV-3', title: 'Escape \u001b[2J here' },
    ];
    expect((await postBulk(cli.service, 'listings', key, { listings: rows.map((row) => validListing(row)) })).statusCode).toBe(201);
    const stored = await allRows(key, 'listings');
    const result = await list(key, 'listings', '--format', 'csv');
    expect(result.code, result.stderr).toBe(0);
    const header =
      'id,external_id,title,description,currency,price_cents,category,material,photo_urls,color,tags,print_time_hours,is_available,allows_custom_orders,thumbnail_url,maker_name,maker_photo_url,created_at,updated_at,archived_at';
    const line = (row: Row, title: string, description: string, color: string, tags: string, hours: string) =>
      [row.id, row['external_id'], title, description, 'USD', '2500', 'miniatures', 'PLA', 'https://cdn.example.test/dragon-1.jpg|https://cdn.example.test/dragon-2.jpg', color, tags, hours, 'true', 'false',
        'https://cdn.example.test/dragon-1.jpg', row['maker_name'], '', row['created_at'], row['updated_at'], ''].join(',');
    // note: quoted, for its comma
    const description = `"${validListing().description}"`;
    // note: in id order, as the API lists them (rows imported within one millisecond may come in any order)
    const expected: Record<string, (row: Row) => string> = {
      'CSV-1': (row) => line(row, 'Plain', description, '', 'a|b', '1.5'),
      'CSV-2': (row) => line(row, '"Comma, ""quote"""', '"Line one\nline two"', 'red', '', ''),
      // a terminal control is written out, as everywhere the CLI prints what a server sent
      'CSV-3': (row) => line(row, 'Escape \\u001b[2J here', description, '', '', ''),
    };
    expect(result.stdout).toBe([header, ...stored.map((row) => expected[row['external_id'] as string]!(row))].join('\n') + '\n');
  });

  it('lists machines, with their verification_status, in either format', async () => {
    const { account, key } = await newPartner(cli.service);
    expect((await postBulk(cli.service, 'machines', key, { machines: [validMachine({ external_id: 'M-1', capabilities: ['pla'] }), validMachine({ external_id: 'M-2' })] })).statusCode).toBe(201);
    await cli.service.sql`update machines set verification_status = 'verified' where account_id = ${account.id} and external_id = 'M-2'`;
    const json = await list(key, 'machines');
    expect(json.code, json.stderr).toBe(0);
    expect(ndjson(json.stdout)).toEqual(await allRows(key, 'machines'));
    expect(ndjson(json.stdout).map((m) => [m['external_id'], m['verification_status']]).sort()).toEqual([['M-1', 'pending'], ['M-2', 'verified']]);
    const csv = await list(key, 'machines', '--format', 'csv');
    const lines = csv.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('id,external_id,template_id,category,manufacturer,model,model_number,nickname,capabilities,is_skill_station,verification_status,created_at,updated_at,archived_at');
    expect(lines.slice(1).map((l) => l.split(',').slice(1, 2).concat(l.split(',').slice(8, 11))).sort()).toEqual([
      ['M-1', 'pla', 'false', 'pending'],
      ['M-2', '', 'false', 'verified'],
    ]);
  });

  it('stops with exit 2 and the server\'s refusal when the key may not read the catalogue', async () => {
    const { account } = await newPartner(cli.service);
    const key = await cli.service.createKey(account, ['jobs:read']);
    expect(await list(key, 'listings')).toEqual({ code: 2, stdout: '', stderr: 'error: 403 Missing required scope: listings_read\n' });
    // while a key with listings:read alone may
    const reader = await cli.service.createKey(account, ['listings:read']);
    expect(await list(reader, 'machines')).toMatchObject({ code: 0, stdout: '' });
  });

  it.each([
    [['--format', 'json'], '--format must be ndjson or csv (got "json")'],
    [['--updated-since', 'yesterday'], '--updated-since: updated_since must be an ISO 8601 date and time with a time zone, e.g. 2026-11-24T02:00:00Z (got "yesterday")'],
    [['--external-id', '  '], '--external-id: external_id must be 1 to 100 printable characters (got "  ")'],
    [['extra'], 'unexpected arguments: extra'],
    [['--limit', '5'], "Unknown option '--limit'"],
  ])('refuses %j before sending anything: exit 2 with the usage', async (args, message) => {
    const result = await list('svc_live_0123abcd_00000000000000000000000000000000', 'listings', ...args);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(`error: ${message}`);
    expect(result.stderr).toContain('usage: bulk-import listings|machines list');
  });

  it('--help prints the usage; a file named list is ./list', async () => {
    const help = await runPartnerCli(['machines', 'list', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('usage: bulk-import listings|machines list');
    const misplaced = await runPartnerCli(['listings', '--dry-run', 'list']);
    expect(misplaced.code).toBe(2);
    expect(misplaced.stderr).toContain('error: list comes right after the kind: bulk-import listings list [options] (a file named list: ./list)');
  });

  it('stops quietly, exit 0, when the reader closes the pipe early (| head), asking for no further page', async () => {
    const { key } = await newPartner(cli.service);
    await importListings(key, 250, (n) => ({ external_id: `H-${n}` }));
    const pagesAsked = () => cli.service.logs.filter((line) => line['url'] === '/v1/api/listings?[redacted]' && line['statusCode'] === 200).length;
    const before = pagesAsked();
    let written = 0;
    // note: as a pipe whose reader has gone: the fourth write fails with EPIPE
    const stdout = new Writable({
      write(_chunk, _encoding, callback) {
        written += 1;
        callback(written > 3 ? Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }) : null);
      },
    });
    const stderr = new PassThrough();
    let errors = '';
    stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    const code = await main(['listings', 'list'], { BULK_IMPORT_API_KEY: key, BULK_IMPORT_BASE_URL: cli.baseUrl }, { stdout, stderr: stderr as unknown as NodeJS.WriteStream });
    expect({ code, errors }).toEqual({ code: 0, errors: '' });
    expect(written).toBe(4);
    expect(pagesAsked() - before).toBe(1);
  });

  describe('through a proxy that answers some pages 429 and 503 first', () => {
    it('waits out Retry-After and retries, and prints every row once', async () => {
      const { key } = await newPartner(cli.service);
      await importListings(key, 250, (n) => ({ external_id: `R-${n}` }));
      const target = new URL(cli.baseUrl);
      const seen: string[] = [];
      // note: the second page is refused 429, then 503 when asked again; every other request goes to the real API.
      const refused = new Set<string>();
      const proxy = createServer((req: IncomingMessage, res: ServerResponse) => {
        seen.push(req.url ?? '');
        const pageNumber = (req.url ?? '').includes('starting_after') ? seen.filter((u) => u.includes('starting_after')).length : 0;
        const refusal = pageNumber === 1 && !refused.has('429') ? '429' : pageNumber >= 2 && !refused.has('503') ? '503' : undefined;
        if (refusal !== undefined) {
          refused.add(refusal);
          res.writeHead(Number(refusal), { 'content-type': 'application/json', 'retry-after': '1' });
          res.end(JSON.stringify(refusal === '429' ? { error: 'Rate limit exceeded (per-minute)', code: 'rate_limited_minute', retry_after_sec: 1 } : { error: 'Service temporarily unavailable', code: 'service_unavailable', retry_after_sec: 1 }));
          return;
        }
        const forwarded = httpRequest({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers }, (upstream) => {
          res.writeHead(upstream.statusCode ?? 502, upstream.headers);
          upstream.pipe(res);
        });
        req.pipe(forwarded);
      });
      proxy.listen(0, '127.0.0.1');
      await once(proxy, 'listening');
      try {
        const result = await runPartnerCli(['listings', 'list', '--api-key', key, '--base-url', `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`]);
        expect(result.code, result.stderr).toBe(0);
        expect(ndjson(result.stdout)).toEqual(await allRows(key, 'listings'));
        expect(ndjson(result.stdout)).toHaveLength(250);
        expect(result.stderr).toContain('429 Rate limit exceeded (per-minute); waiting 1.0 s (Retry-After)');
        expect(result.stderr).toMatch(/attempt 1 of 8 failed \(503 Service temporarily unavailable\); retrying in/);
        expect(refused).toEqual(new Set(['429', '503']));
        // 3 pages, the second asked three times
        expect(seen).toHaveLength(5);
      } finally {
        proxy.close();
      }
    });
  });
});
