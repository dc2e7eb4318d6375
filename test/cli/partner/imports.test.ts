import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newPartner, postBulk } from '../../support/bulk-endpoint.js';
import { bearer, validListing } from '../../support/fixtures.js';
import { runPartnerCli } from '../../support/partner-cli.js';
import type { TestService } from '../../support/test-service.js';
import { startCliService, type CliService } from '../../support/cli-service.js';

interface ImportBody {
  id: string;
  kind: string;
  state: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

/**
 * `bulk-import imports show|list|errors` against a real service: what they print is what the API
 * answers, and the rebuilt report is the one an import run writes.
 */
describe('bulk-import imports', () => {
  let service: TestService;
  let baseUrl: string;
  let dir: string;

  let cli: CliService;

  beforeAll(async () => {
    cli = await startCliService('bulk-import-imports-');
    ({ service, baseUrl, dir } = cli);
  });
  afterAll(async () => {
    await cli?.close();
  });

  const imports = (key: string, ...args: string[]) => runPartnerCli(['imports', ...args], { BULK_IMPORT_API_KEY: key, BULK_IMPORT_BASE_URL: baseUrl });
  const get = async <T>(key: string, url: string) => (await service.request({ method: 'GET', url, headers: bearer(key) })).json<T>();
  /** Every import of the account, newest first, as the API pages them. */
  const allImports = async (key: string): Promise<ImportBody[]> => {
    const all: ImportBody[] = [];
    for (let after = ''; ; ) {
      const page = await get<{ data: ImportBody[]; has_more: boolean }>(key, `/v1/api/imports?limit=100${after}`);
      all.push(...page.data);
      if (!page.has_more) return all;
      after = `&starting_after=${page.data.at(-1)!.id}`;
    }
  };

  it('show: the import a run made, as a short summary, or with --json as the API answers it', async () => {
    const { key } = await newPartner(service);
    const file = join(dir, 'three.json');
    await writeFile(file, JSON.stringify([validListing(), validListing({ external_id: 'SKU-1' }), validListing()]));
    const run = await runPartnerCli(['listings', file, '--api-key', key, '--base-url', baseUrl, '--quiet']);
    expect(run.code, run.stderr).toBe(0);
    const [found] = await allImports(key);

    const shown = await imports(key, 'show', found!.id);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toBe(
      [
        `import ${found!.id}: listings, completed`,
        '  source    a bulk request',
        `  created   ${found!.created_at}`,
        `  started   ${found!.started_at}`,
        `  finished  ${found!.finished_at}`,
        '  rows      3 received, 3 inserted, 0 updated, 0 unchanged, 0 skipped',
      ].join('\n') + '\n',
    );
    const json = await imports(key, 'show', found!.id, '--json');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(await get(key, `/v1/api/imports/${found!.id}`));
  });

  it.each(['show', 'errors'])('%s: an import the account does not have is a clear message and exit 1', async (command) => {
    const owner = await newPartner(service);
    const stranger = await newPartner(service);
    const created = await postBulk(service, 'listings', owner.key, { listings: [validListing()] });
    const theirs = created.json<{ import_id: string }>().import_id;
    const report = join(dir, `not-found-${command}.csv`);
    for (const id of [theirs, crypto.randomUUID()]) {
      const result = await imports(stranger.key, command, id, ...(command === 'errors' ? ['--report', report] : []));
      expect(result).toEqual({
        code: 1,
        stdout: '',
        stderr: `error: import ${id} not found: it is not an import of this account (unknown, another account's, or past its retention)\n`,
      });
    }
    expect(existsSync(report)).toBe(false);
  });

  it('list: newest first, following has_more across pages, one line each or NDJSON', async () => {
    const { key } = await newPartner(service);
    // 103 imports: more than the 100 one page holds
    for (let n = 0; n < 103; n += 1) expect((await postBulk(service, 'listings', key, { listings: [validListing()] })).statusCode).toBe(201);
    const expected = await allImports(key);
    expect(expected).toHaveLength(103);
    const line = (found: ImportBody) => `${found.id}  listings  completed  ${found.created_at}  1 received, 1 inserted, 0 updated, 0 unchanged, 0 skipped`;

    const listed = await imports(key, 'list', '--limit', '102');
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toBe(`${expected.slice(0, 102).map(line).join('\n')}\n`);

    const first = await imports(key, 'list');
    expect(first.stdout.trimEnd().split('\n')).toEqual(expected.slice(0, 20).map(line));

    const json = await imports(key, 'list', '--limit', '500', '--json');
    expect(json.code).toBe(0);
    expect(json.stdout.trimEnd().split('\n').map((text) => JSON.parse(text))).toEqual(expected);

    const none = await imports((await newPartner(service)).key, 'list');
    expect(none).toMatchObject({ code: 0, stdout: '', stderr: expect.stringMatching(/^note: the account has no imports/) });
  });

  it('errors: rebuilds the report of an import, line for line as the CLI writes it, in CSV and JSON', async () => {
    const { key } = await newPartner(service);
    const rows = [
      validListing(),
      validListing({ external_id: 'SKU-2', price_cents: 12.5 }),
      validListing({ currency: 'EUR', photo_urls: ['http://cdn.example.test/x.jpg'] }),
      validListing({ external_id: 'SKU-4' }),
      validListing({ external_id: 'SKU-5, "quoted"', title: '' }),
    ];
    // A partner's own client sends them in one request; the server refuses three.
    const created = await postBulk(service, 'listings', key, { listings: rows });
    expect(created.json()).toMatchObject({ inserted: 2, skipped: 3 });
    const id = created.json<{ import_id: string }>().import_id;
    // The CLI's report of the same rows: a JSON array, whose locations are the rows' positions,
    // as `index` is in the request. (A CLI import run never sends a row its own checks refuse,
    // so the failed rows of its imports are only those a server refuses and the CLI did not.)
    const file = join(dir, 'five.json');
    await writeFile(file, JSON.stringify(rows));
    for (const format of ['csv', 'json']) {
      const written = join(dir, `run-report.${format}`);
      const run = await runPartnerCli(['listings', file, '--dry-run', '--quiet', '--report', written]);
      expect(run.code).toBe(1);
      const rebuilt = join(dir, `rebuilt-report.${format}`);
      const result = await imports(key, 'errors', id, '--report', rebuilt);
      expect(result).toEqual({ code: 0, stdout: `import ${id}: 3 failed rows written to ${rebuilt}\n`, stderr: '' });
      expect(await readFile(rebuilt, 'utf8')).toBe(await readFile(written, 'utf8'));
    }
    expect(await readFile(join(dir, 'rebuilt-report.csv'), 'utf8')).toBe(
      [
        'index,reason,field,code,external_id',
        '1,price_cents: must be a whole number,price_cents,not_whole_number,SKU-2',
        '2,currency: must be exactly USD; photo_urls[0]: must be an absolute https:// URL,currency,not_allowed,',
        '2,currency: must be exactly USD; photo_urls[0]: must be an absolute https:// URL,photo_urls[0],invalid_url,',
        '4,title: required,title,required,"SKU-5, ""quoted"""',
      ].join('\n') + '\n',
    );

    const json = await imports(key, 'errors', id, '--report', join(dir, 'again.json'), '--json');
    expect(JSON.parse(json.stdout)).toEqual({ import_id: id, state: 'completed', failed_rows: 3, report: join(dir, 'again.json') });
  });

  it("errors: an import run's report and its imports' rebuilt ones agree", async () => {
    const { key } = await newPartner(service);
    const file = join(dir, 'clean.json');
    await writeFile(file, JSON.stringify(Array.from({ length: 3 }, () => validListing())));
    const written = join(dir, 'clean-run.csv');
    const run = await runPartnerCli(['listings', file, '--api-key', key, '--base-url', baseUrl, '--quiet', '--report', written]);
    expect(run.code, run.stderr).toBe(0);
    const [found] = await allImports(key);
    const rebuilt = join(dir, 'clean-rebuilt.csv');
    expect(await imports(key, 'errors', found!.id, '--report', rebuilt)).toMatchObject({ code: 0, stdout: `import ${found!.id}: 0 failed rows written to ${rebuilt}\n` });
    expect(await readFile(rebuilt, 'utf8')).toBe(await readFile(written, 'utf8'));
  });
});
