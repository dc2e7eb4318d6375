import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPartnerCli, WELL_FORMED_KEY } from '../../support/partner-cli.js';
import { freePort } from '../../support/processes.js';

const KEY = WELL_FORMED_KEY;
const run = runPartnerCli;

const listingLine = (title: string, price = '2500') => `${title},A fine print,${price},USD,miniatures,PLA,https://cdn.example.test/${title}.jpg,a|b`;
const HEADER = 'title,description,price_cents,currency,category,material,photo_urls,tags';

describe('bulk-import (in process, no server)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bulk-import-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('--dry-run validates a 450-row CSV, reports the bad lines in file order and exits 1', async () => {
    const lines = [HEADER];
    for (let i = 0; i < 450; i += 1) lines.push(listingLine(`t${i}`, i % 100 === 7 ? '12.5' : '2500'));
    lines.splice(3, 0, '"Multi', 'line",x,1,USD,miniatures,PLA,https://cdn.example.test/m.jpg,'); // lines 4-5: valid
    const file = join(dir, 'listings.csv');
    await writeFile(file, `${lines.join('\n')}\n`);
    const report = join(dir, 'report.csv');
    const result = await run(['listings', file, '--dry-run', '--report', report, '--json']);
    expect(result.code, result.stderr).toBe(1);
    const summary = JSON.parse(result.stdout);
    expect(summary).toMatchObject({ dry_run: true, rows_read: 451, valid: 446, failed: 5, batches: 0, completed: true });
    // row i sits on line i + 2, or i + 4 once past the two-line record
    expect(await readFile(report, 'utf8')).toBe(
      ['line,reason,field,code,external_id', ...[7, 107, 207, 307, 407].map((i) => `${i + 4},price_cents: must be a whole number,price_cents,not_whole_number,`)].join('\n') + '\n',
    );
    expect(result.stderr).toMatch(/progress: 451\/451 rows \(100%\)/);
  });

  it('--dry-run of a JSON array reports element indexes in a JSON report and exits 0 when all are valid', async () => {
    const file = join(dir, 'machines.json');
    await writeFile(file, JSON.stringify([{ template_id: 't', category: 'fdm', manufacturer: 'P', model: 'M' }, { template_id: 't' }, 'x']));
    const report = join(dir, 'report.json');
    const result = await run(['machines', file, '--dry-run', '--report', report]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^machines: 3 rows read, 1 valid, 2 failed, nothing sent \(dry run\), [\d.]+ s\n$/);
    expect(JSON.parse(await readFile(report, 'utf8'))).toEqual([
      {
        index: 1,
        reason: 'category: required; manufacturer: required; model: required',
        details: ['category', 'manufacturer', 'model'].map((field) => ({ field, code: 'required', message: 'required' })),
      },
      { index: 2, reason: 'row must be an object', details: [{ field: null, code: 'not_an_object', message: 'row must be an object' }] },
    ]);
    await writeFile(file, JSON.stringify([{ template_id: 't', category: 'fdm', manufacturer: 'P', model: 'M' }]));
    expect((await run(['machines', file, '--dry-run', '--report', report])).code).toBe(0);
    expect(JSON.parse(await readFile(report, 'utf8'))).toEqual([]);
  });

  it('refuses a truncated file before sending anything', async () => {
    const file = join(dir, 'cut.json');
    await writeFile(file, '[{"template_id": "t", "category": "fdm", "manufacturer": "P", "model": "M"}, {"templ');
    const result = await run(['machines', file, '--api-key', KEY, '--base-url', 'http://127.0.0.1:9']);
    expect(result).toMatchObject({ code: 2, stdout: '' });
    expect(result.stderr).toMatch(/looks truncated.*nothing was sent/);
  });

  it("stops on a file its reader cannot read on with the reader's own message (exit 2)", async () => {
    const file = join(dir, 'no-fields.csv');
    await writeFile(file, 'a,b\n1,2\n');
    const result = await run(['listings', file, '--dry-run']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/error: the first line must be a header naming listings fields/);
    expect(result.stderr).not.toMatch(/unexpected error/);
  });

  it.each([
    [[], /first argument must be machines or listings/],
    [['things', 'x.csv'], /first argument/],
    [['listings'], /FILE is required/],
    [['listings', 'x.txt', '--dry-run'], /cannot tell the format/],
    [['listings', 'x.csv', '--dry-run', '--report', 'out.txt'], /--report must name a .csv or .json file/],
    [['listings', 'x.csv'], /API key is required/],
    [['listings', 'x.csv', '--api-key', 'svc_live_nope'], /API key is malformed/],
    [['listings', 'x.csv', '--api-key', KEY], /base URL is required/],
    [['listings', 'x.csv', '--api-key', KEY, '--base-url', 'ftp://x'], /must be an http/],
    [['listings', 'x.csv', '--dry-run', '--retries', '0'], /--retries must be a positive whole number/],
    [['listings', 'x.csv', '--dry-run', '--bogus'], /Unknown option '--bogus'/],
    [['listings', 'missing.csv', '--dry-run'], /cannot read missing.csv/],
    [['--quiet', 'imports', 'list'], /imports comes first: bulk-import imports show\|list\|errors/],
  ])('exits 2 on %j', async (args, message) => {
    const result = await run(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
  });

  it('takes the key and base URL from the environment', async () => {
    const file = join(dir, 'one.ndjson');
    await writeFile(file, '{"template_id": "t", "category": "fdm", "manufacturer": "P", "model": "M"}\n');
    const port = await freePort();
    const result = await run(['machines', file, '--retries', '2', '--quiet'], {
      BULK_IMPORT_API_KEY: KEY,
      BULK_IMPORT_BASE_URL: `http://127.0.0.1:${port}`,
    });
    // nothing listens on the port: two refused connections, then exit 2
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/attempt 1 of 2 failed \(fetch failed: .*ECONNREFUSED/);
    expect(result.stderr).toMatch(/gave up after 2 attempts/);
    expect(result.stdout).toMatch(/1 rows read, 0 inserted, 1 failed, 0 batches.*stopped/);
  });

  it('--help prints the usage and exits 0', async () => {
    const result = await run(['--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^usage: bulk-import listings\|machines FILE/);
    expect(result.stdout).toContain('bulk-import imports show|list|errors');
  });

  it.each([
    [['imports'], /imports takes show, list, errors \(got ""\)/],
    [['imports', 'delete', 'x'], /imports takes show, list, errors \(got "delete"\)/],
    [['imports', 'show'], /imports show needs the import's ID/],
    [['imports', 'show', 'x'.repeat(65)], /an import ID is 1 to 64 characters/],
    [['imports', 'show', 'a', 'b'], /unexpected arguments: b/],
    [['imports', 'list', 'a'], /unexpected arguments: a/],
    [['imports', 'list', '--limit', '0'], /--limit must be a positive whole number \(got "0"\)/],
    [['imports', 'show', 'a', '--limit', '5'], /--limit is for imports list/],
    [['imports', 'show', 'a', '--report', 'r.csv'], /--report is for imports errors/],
    [['imports', 'errors', 'a'], /imports errors needs --report FILE/],
    [['imports', 'errors', 'a', '--report', 'r.txt'], /--report must name a .csv or .json file/],
    [['imports', 'show', 'a'], /API key is required/],
    [['imports', 'list', '--api-key', KEY], /base URL is required/],
    [['imports', 'list', '--api-key', KEY, '--base-url', 'http://api.example.com'], /sends your API key unencrypted/],
  ])('imports: exits 2 on %j, with the usage of imports', async (args, message) => {
    const result = await run(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).toContain('usage: bulk-import imports show ID');
  });

  it('imports --help prints the usage of imports and exits 0', async () => {
    for (const args of [['imports', '--help'], ['imports', 'errors', '-h']]) {
      const result = await run(args);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/^usage: bulk-import imports show ID/);
    }
  });

  it('imports: a server that cannot be reached stops after the retries (exit 2)', async () => {
    const port = await freePort();
    const result = await run(['imports', 'show', 'some-id', '--retries', '2'], { BULK_IMPORT_API_KEY: KEY, BULK_IMPORT_BASE_URL: `http://127.0.0.1:${port}` });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/reading \/v1\/api\/imports\/some-id: attempt 1 of 2 failed \(fetch failed: .*ECONNREFUSED/);
    expect(result.stderr).toMatch(/error: gave up after 2 attempts to read \/v1\/api\/imports\/some-id/);
    expect(result.stdout).toBe('');
  });
});
