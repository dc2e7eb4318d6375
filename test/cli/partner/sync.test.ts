import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPartnerCli } from '../../support/partner-cli.js';
import type { TestService } from '../../support/test-service.js';
import { startCliService, type CliService } from '../../support/cli-service.js';
import { newPartner, storedFor } from '../../support/bulk-endpoint.js';

const HEADER = 'external_id,title,description,price_cents,currency,category,material,photo_urls';
const line = (id: string, price = 2500) => `${id},Lamp ${id},A fine print,${price},USD,home_decor,PLA,https://cdn.example.test/${id}.jpg`;

/**
 * A partner's nightly sync with the CLI against a real service: `--dry-run=server` says what an
 * import would do and writes nothing, the import does it, and the report carries the codes.
 */
describe('bulk-import: a nightly sync by external_id', () => {
  let service: TestService;
  let baseUrl: string;
  let dir: string;

  let cli: CliService;

  beforeAll(async () => {
    cli = await startCliService('bulk-import-sync-');
    ({ service, baseUrl, dir } = cli);
  });
  afterAll(async () => {
    await cli?.close();
  });

  it('--dry-run=server predicts, the import does it, and a second night changes only what changed', async () => {
    const { account, key } = await newPartner(service);
    const file = join(dir, 'catalogue.csv');
    // 250 rows: two batches of the 200-row limit
    await writeFile(file, [HEADER, ...Array.from({ length: 250 }, (_, i) => line(`SKU-${i}`))].join('\n') + '\n');
    const run = (...extra: string[]) => runPartnerCli(['listings', file, '--api-key', key, '--base-url', baseUrl, '--quiet', ...extra]);

    const predicted = await run('--dry-run=server', '--json');
    expect(predicted.code, predicted.stderr).toBe(0);
    expect(JSON.parse(predicted.stdout)).toMatchObject({ dry_run: true, dry_run_mode: 'server', rows_read: 250, inserted: 250, updated: 0, unchanged: 0, failed: 0, batches: 2 });
    expect(await storedFor(service, account)).toMatchObject({ listings: 0, imports: 0 });

    const first = await run();
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^listings: 250 rows read, 250 inserted, 0 failed, 2 batches, [\d.]+ s\n$/);

    // the next night: ten prices changed
    await writeFile(file, [HEADER, ...Array.from({ length: 250 }, (_, i) => line(`SKU-${i}`, i < 10 ? 999 : 2500))].join('\n') + '\n');
    const check = await run('--dry-run=server');
    expect(check.stdout).toMatch(/^listings: 250 rows read, would insert 0, update 10, leave 240 unchanged, 0 failed, 2 batches, nothing written \(server dry run\), [\d.]+ s\n$/);
    const second = await run('--json');
    expect(JSON.parse(second.stdout)).toMatchObject({ dry_run: false, inserted: 0, updated: 10, unchanged: 240, failed: 0 });
    expect(await storedFor(service, account)).toMatchObject({ listings: 250 });
  });

  it('fails a repeated external_id anywhere in the file, and writes the codes of every failure to the report', async () => {
    const { account, key } = await newPartner(service);
    const file = join(dir, 'repeats.csv');
    const rows = Array.from({ length: 210 }, (_, i) => line(`R-${i}`));
    rows[5] = line('R-0'); // the same batch as its first occurrence
    rows[205] = line('R-1'); // a later batch
    rows[7] = 'R-7,Lamp,A fine print,12.5,EUR,home_decor,PLA,https://cdn.example.test/x.jpg';
    await writeFile(file, [HEADER, ...rows].join('\n') + '\n');
    const report = join(dir, 'repeats-report.csv');
    const result = await runPartnerCli(['listings', file, '--api-key', key, '--base-url', baseUrl, '--quiet', '--report', report]);
    expect(result.code).toBe(1);
    expect(await readFile(report, 'utf8')).toBe(
      [
        'line,reason,field,code,external_id',
        '7,external_id: appears more than once in this file,external_id,duplicate_external_id,R-0',
        '9,currency: must be exactly USD; price_cents: must be a whole number,currency,not_allowed,R-7',
        '9,currency: must be exactly USD; price_cents: must be a whole number,price_cents,not_whole_number,R-7',
        '207,external_id: appears more than once in this file,external_id,duplicate_external_id,R-1',
      ].join('\n') + '\n',
    );
    expect(await storedFor(service, account)).toMatchObject({ listings: 207 });
  });

  it('refuses --dry-run with another value, and needs a key for a server dry run', async () => {
    const file = join(dir, 'one.csv');
    await writeFile(file, `${HEADER}\n${line('X')}\n`);
    const bad = await runPartnerCli(['listings', file, '--dry-run=remote']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--dry-run takes local or server (got "remote")');
    const keyless = await runPartnerCli(['listings', file, '--dry-run=server', '--base-url', baseUrl]);
    expect(keyless.code).toBe(2);
    expect(keyless.stderr).toContain('an API key is required');
    expect((await runPartnerCli(['listings', file, '--dry-run=local'])).code).toBe(0);
  });
});
