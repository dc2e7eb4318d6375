import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { writeFileChunk } from '../../../src/worker/write-file-chunk.js';
import { newPartner, storedFor } from '../../support/bulk-endpoint.js';
import { startCliService, type CliService } from '../../support/cli-service.js';
import { bearer, validListing } from '../../support/fixtures.js';
import { runPartnerCli, startPartnerCli, WELL_FORMED_KEY } from '../../support/partner-cli.js';

const HEADER = 'external_id,title,description,price_cents,currency,category,material,photo_urls';
const csvLine = (id: string, price = '2500') => `${id},Lamp ${id},A fine print,${price},USD,home_decor,PLA,https://cdn.example.test/${id}.jpg|https://cdn.example.test/${id}-2.jpg`;

/**
 * `bulk-import <kind> FILE --background` (docs/partner-cli.md#one-file-import-in-the-background):
 * the whole file as one file import, written by the service's own worker, watched until it ends,
 * its failed rows read back from /errors into the report at their lines in the file.
 */
describe('bulk-import --background', () => {
  let cli: CliService;
  beforeAll(async () => {
    cli = await startCliService('bulk-import-background-');
  });
  afterAll(async () => {
    await cli?.close();
  });
  const run = (key: string, ...args: string[]) => runPartnerCli([...args, '--api-key', key, '--base-url', cli.baseUrl]);
  const filesOf = async (accountId: string) =>
    (await cli.service.sql<{ state: string; source: string }[]>`select state, source from imports where account_id = ${accountId}`).map((row) => `${row.source} ${row.state}`);

  it('imports a CSV file with good, bad and repeated rows as one file import, and reports the failed ones at their lines', async () => {
    const { account, key } = await newPartner(cli.service);
    const file = join(cli.dir, 'catalogue.csv');
    const report = join(cli.dir, 'catalogue-report.csv');
    await writeFile(
      file,
      [
        HEADER,
        csvLine('A-1'), // line 2
        '"A-2","Lamp',
        'on two lines",A fine print,2500,USD,home_decor,PLA,https://cdn.example.test/a.jpg', // lines 3-4
        '', // a blank line 5: not a row
        csvLine('A-3', '12.5'), // line 6: not a whole number
        csvLine('A-1', '999'), // line 7: A-1 again
        'A-4,too,few', // line 8: wrong cell count
        csvLine('A-5'), // line 9
      ].join('\r\n') + '\r\n',
    );
    const result = await run(key, 'listings', file, '--background', '--report', report, '--json');
    // note: the run finished with failed rows: 1, as a batched run's (docs/partner-cli.md#exit-status)
    expect(result.code, result.stderr).toBe(1);
    const summary = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(summary).toMatchObject({ rows_read: 6, inserted: 3, failed: 3, unaccounted: 0, batches: 1, completed: true, import_state: 'completed' });
    expect(result.stderr).toContain(`import ${String(summary.import_id)}: the file is stored`);
    expect(await readFile(report, 'utf8')).toBe(
      [
        'line,reason,field,code,external_id',
        // note: the server's error list names the external_id only of a repeated row, not of a row its checks refused
        '6,price_cents: must be a whole number,price_cents,not_whole_number,',
        '7,external_id: appears more than once in this file,external_id,duplicate_external_id,A-1',
        '8,"expected 8 cells as in the header, got 3",,not_an_object,',
      ].join('\n') + '\n',
    );
    expect(await storedFor(cli.service, account)).toMatchObject({ listings: 3 });
    const [a1] = await cli.service.sql<{ price_cents: number; title: string }[]>`select price_cents, title from listings where account_id = ${account.id} and external_id = 'A-1'`;
    expect(a1).toMatchObject({ price_cents: 2500 });
    expect(await filesOf(account.id)).toEqual(['file completed']);
  });

  it('imports an NDJSON file, exits 0 when every row is in, and a second run of it updates in place', async () => {
    const { account, key } = await newPartner(cli.service);
    const file = join(cli.dir, 'catalogue.ndjson');
    const rows = Array.from({ length: 1_500 }, (_, i) => JSON.stringify(validListing({ external_id: `N-${i}` })));
    await writeFile(file, rows.join('\n') + '\n');
    const first = await run(key, 'listings', file, '--background');
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^listings: 1500 rows read, 1500 inserted, 0 failed, import [\w-]+ completed, [\d.]+ s\n$/);
    expect(first.stderr).toMatch(/progress: 1500\/1500 rows \(100%\)/);

    rows[3] = JSON.stringify(validListing({ external_id: 'N-3', price_cents: 999 }));
    rows.splice(10, 0, '', 'not json', JSON.stringify(validListing({ external_id: 'N-0' })));
    await writeFile(file, rows.join('\n') + '\n');
    const report = join(cli.dir, 'catalogue-report.json');
    const second = await run(key, 'listings', file, '--background', '--report', report, '--json');
    expect(second.code, second.stderr).toBe(1);
    expect(JSON.parse(second.stdout)).toMatchObject({ rows_read: 1502, inserted: 0, updated: 1, unchanged: 1499, failed: 2, completed: true });
    const failed = JSON.parse(await readFile(report, 'utf8')) as { line: number; details: { code: string }[] }[];
    expect(failed.map((row) => [row.line, row.details[0]!.code])).toEqual([
      [12, 'not_an_object'],
      [13, 'duplicate_external_id'],
    ]);
    expect(await storedFor(cli.service, account)).toMatchObject({ listings: 1500 });
  });

  it('sends a JSON array as NDJSON and reports failed rows by their index in the array', async () => {
    const { account, key } = await newPartner(cli.service);
    const file = join(cli.dir, 'catalogue.json');
    await writeFile(file, JSON.stringify([validListing(), validListing({ currency: 'EUR' }), validListing()], null, 2));
    const report = join(cli.dir, 'json-report.csv');
    const result = await run(key, 'listings', file, '--background', '--report', report);
    expect(result.code, result.stderr).toBe(1);
    expect(await readFile(report, 'utf8')).toBe('index,reason,field,code,external_id\n1,currency: must be exactly USD,currency,not_allowed,\n');
    expect(await storedFor(cli.service, account)).toMatchObject({ listings: 2 });
  });

  it('stops on 429 Too many file imports in progress when Retry-After is past --max-wait, keeping nothing (exit 2)', async () => {
    const { account, key } = await newPartner(cli.service);
    for (let n = 0; n < 2; n += 1) {
      await cli.service.sql`
        insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, source, created_at)
        values (${crypto.randomUUID()}, ${account.id}, 'listings', 'waiting', 1, 0, 0, '[]', 'running', 'file', now())`;
    }
    const file = join(cli.dir, 'busy.csv');
    await writeFile(file, `${HEADER}\n${csvLine('B-1')}\n`);
    const result = await run(key, 'listings', file, '--background', '--max-wait', '30');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('error: 429 Too many file imports in progress: the server asks to wait 60.0 s, more than --max-wait allows');
    expect(result.stdout).toMatch(/^listings: 0 rows read, 0 inserted, 0 failed, no import, [\d.]+ s; stopped\n$/);
    expect(await storedFor(cli.service, account)).toMatchObject({ listings: 0 });
  });

  it('--help lists --background; --background refuses --dry-run', async () => {
    const help = await runPartnerCli(['--help']);
    expect(help.stdout).toMatch(/--background +send the whole file as one file import/);
    const both = await runPartnerCli(['listings', 'x.csv', '--background', '--dry-run', '--api-key', WELL_FORMED_KEY, '--base-url', cli.baseUrl]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--background cannot be combined with --dry-run');
  });
});

/**
 * A file import cancelled (POST /v1/api/imports/{id}/cancel) while the CLI watches it: the CLI
 * stops watching, says so, and exits 2 (docs/partner-cli.md#one-file-import-in-the-background).
 */
describe('bulk-import --background when the import is cancelled', () => {
  let cli: CliService;
  beforeAll(async () => {
    // note: no worker: the test writes the one chunk the import gets before it is cancelled.
    cli = await startCliService('bulk-import-background-cancel-', { worker: false });
  });
  afterAll(async () => {
    await cli?.close();
  });

  it('stops watching once the import reads cancelled, says what stays written, reports the failed rows, and exits 2', async () => {
    const { account, key } = await newPartner(cli.service);
    const file = join(cli.dir, 'cancelled.ndjson');
    // note: 1,500 valid rows and a failed one: the upload stages a chunk per 1,000 rows read, so the
    // first chunk holds 999 rows and the second the other 501
    const rows = Array.from({ length: 1_500 }, (_, i) => JSON.stringify(validListing({ external_id: `C-${i}` })));
    rows.splice(3, 0, JSON.stringify(validListing({ external_id: 'C-bad', currency: 'EUR' }))); // line 4
    await writeFile(file, rows.join('\n') + '\n');
    const report = join(cli.dir, 'cancelled-report.csv');
    const cliRun = startPartnerCli(['listings', file, '--background', '--report', report, '--api-key', key, '--base-url', cli.baseUrl]);

    const stored = await vi.waitFor(
      () => {
        const match = /import ([\w-]+): the file is stored/.exec(cliRun.stderr());
        if (!match) throw new Error(`no import named yet; stderr:\n${cliRun.stderr()}`);
        return match[1]!;
      },
      { timeout: 10_000, interval: 50 },
    );
    // a worker's first chunk, then the partner's cancel (from another terminal, say)
    expect(await writeFileChunk(cli.service.sql, stored)).toMatchObject({ state: 'written', rows: 999 });
    const cancel = await cli.service.request({ method: 'POST', url: `/v1/api/imports/${stored}/cancel`, headers: bearer(key) });
    expect(cancel.statusCode, cancel.body).toBe(200);
    expect(cancel.json()).toMatchObject({ state: 'cancelled', rows: { received: 1_501, processed: 1_000, inserted: 999, skipped: 1 } });

    // bounded: the CLI reads the import at most 5 s apart
    let timer: NodeJS.Timeout | undefined;
    const result = await Promise.race([
      cliRun.done,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the CLI still watches 15 s after the cancel; stderr:\n${cliRun.stderr()}`)), 15_000);
      }),
    ]).finally(() => clearTimeout(timer));
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(`error: import ${stored} was cancelled: the rows it wrote before stay written, the rest were not written\n`);
    expect(result.stdout).toMatch(new RegExp(`^listings: 1501 rows read, 999 inserted, 1 failed, import ${stored} cancelled, [\\d.]+ s; stopped\n$`));
    expect(await readFile(report, 'utf8')).toBe('line,reason,field,code,external_id\n4,currency: must be exactly USD,currency,not_allowed,\n');
    expect(await storedFor(cli.service, account)).toMatchObject({ listings: 999 });
    // the import stays as the cancel left it
    expect((await cli.service.request({ method: 'GET', url: `/v1/api/imports/${stored}`, headers: bearer(key) })).json()).toMatchObject({
      state: 'cancelled',
      rows: { received: 1_501, processed: 1_000, inserted: 999 },
    });
  });
});

describe('bulk-import --background against a server that says wait', () => {
  it('waits out a 429 and sends the whole file again, read anew, with the same Idempotency-Key', async () => {
    const received: { body: string; key: string | undefined; type: string | undefined }[] = [];
    const IMPORT = {
      id: '2e3f4a5b-6c7d-4e8f-9a0b-1c2d3e4f5a6b',
      kind: 'listings',
      source: 'file',
      state: 'completed',
      created_at: '2026-11-24T03:00:00.410Z',
      started_at: '2026-11-24T03:00:01.020Z',
      finished_at: '2026-11-24T03:00:02.385Z',
      rows: { received: 2, processed: 2, inserted: 2, updated: 0, unchanged: 0, skipped: 0 },
      error_count: 0,
    };
    const server = createServer((req: IncomingMessage, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        if (req.method === 'POST') {
          received.push({ body, key: req.headers['idempotency-key'] as string | undefined, type: req.headers['content-type'] });
          const busy = received.length === 1;
          res.writeHead(busy ? 429 : 202, { 'content-type': 'application/json', ...(busy ? { 'retry-after': '1' } : { location: `/v1/api/imports/${IMPORT.id}` }) });
          res.end(JSON.stringify(busy ? { error: 'Too many file imports in progress', retry_after_sec: 1 } : { import: { ...IMPORT, state: 'queued', rows: { ...IMPORT.rows, processed: 0, inserted: 0 } } }));
        } else {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify(IMPORT));
        }
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { tmpdir } = await import('node:os');
    const file = join(tmpdir(), `bulk-import-background-${process.pid}.json`);
    await writeFile(file, JSON.stringify([validListing({ title: 'one' }), validListing({ title: 'two' })]));
    try {
      const cliRun = startPartnerCli(['listings', file, '--background', '--api-key', WELL_FORMED_KEY, '--base-url', `http://127.0.0.1:${(server.address() as AddressInfo).port}`]);
      const result = await cliRun.done;
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toContain('429 Too many file imports in progress; waiting 1.0 s (Retry-After)');
      expect(received).toHaveLength(2);
      expect(received[0]!.key).toMatch(/^[0-9a-f-]{36}$/);
      expect(received[1]).toEqual(received[0]);
      expect(received[1]!.type).toBe('application/x-ndjson');
      expect(received[1]!.body.split('\n').map((line) => (line === '' ? null : (JSON.parse(line) as { title: string }).title))).toEqual(['one', 'two', null]);
    } finally {
      server.close();
    }
  });
});
