import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newPartner, postBulk, storedFor } from '../../support/bulk-endpoint.js';
import { startCliService, type CliService } from '../../support/cli-service.js';
import { validListing, validMachine } from '../../support/fixtures.js';
import { runPartnerCli } from '../../support/partner-cli.js';
import type { TestAccount } from '../../support/test-service.js';

/**
 * `bulk-import <kind> FILE --merge` against a real API and worker (docs/partner-cli.md#merge-and-mirror):
 * rows carry their external_id and the fields that changed; the rest of each row stays as stored.
 */
describe('bulk-import --merge', () => {
  let cli: CliService;
  beforeAll(async () => {
    cli = await startCliService('bulk-import-merge-');
  });
  afterAll(async () => {
    await cli?.close();
  });
  const run = (key: string, ...args: string[]) => runPartnerCli([...args, '--api-key', key, '--base-url', cli.baseUrl]);

  /** Listings `<prefix>-0..count-1`, each priced 2500 and titled `Lamp <id>`. */
  async function seed(key: string, prefix: string, count: number): Promise<void> {
    const rows = Array.from({ length: count }, (_, i) => validListing({ external_id: `${prefix}-${i}`, title: `Lamp ${prefix}-${i}`, price_cents: 2500, color: 'red' }));
    expect((await postBulk(cli.service, 'listings', key, { listings: rows })).statusCode).toBe(201);
  }
  const stored = async (account: TestAccount) =>
    cli.service.sql<{ external_id: string; title: string; price_cents: number; color: string | null; description: string }[]>`
      select external_id, title, price_cents, color, description from listings where account_id = ${account.id} order by external_id`;

  it('changes one field of existing rows from a CSV of external_id and price_cents, leaving every other field as stored (exit 0)', async () => {
    const { account, key } = await newPartner(cli.service);
    await seed(key, 'M', 3);
    const before = await stored(account);
    const file = join(cli.dir, 'prices.csv');
    // note: the CSV has only the two columns; a whole import of it would fail every row
    await writeFile(file, 'external_id,price_cents\nM-0,1999\nM-2,3100\n');
    const result = await run(key, 'listings', file, '--merge', '--json');
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ update: 'merge', rows_read: 2, valid: 2, inserted: 0, updated: 2, unchanged: 0, failed: 0, batches: 1 });
    const after = await stored(account);
    expect(after.map((row) => [row.external_id, row.price_cents])).toEqual([
      ['M-0', 1999],
      ['M-1', 2500],
      ['M-2', 3100],
    ]);
    expect(after.map(({ title, color, description }) => ({ title, color, description }))).toEqual(before.map(({ title, color, description }) => ({ title, color, description })));

    const whole = await run(key, 'listings', file, '--quiet');
    expect(whole.code).toBe(1);
    expect(whole.stderr).toContain('line 2: title: required');
  });

  it('reports a partial row naming no row of the account failed at its line, with the fields it lacks; the other rows merge (exit 1)', async () => {
    const { account, key } = await newPartner(cli.service);
    await seed(key, 'P', 2);
    const file = join(cli.dir, 'partial.ndjson');
    const report = join(cli.dir, 'partial-report.csv');
    await writeFile(
      file,
      [
        JSON.stringify({ external_id: 'P-0', color: null }), // line 1: clears the colour
        JSON.stringify({ external_id: 'NEW-1', price_cents: 500 }), // line 2: names no row, not whole
        JSON.stringify({ price_cents: 700 }), // line 3: no external_id, refused before sending
        JSON.stringify(validListing({ external_id: 'NEW-2', title: 'Whole and new' })), // line 4: created
        JSON.stringify({ external_id: 'P-1', title: 'Lamp P-1' }), // line 5: as stored
      ].join('\n') + '\n',
    );
    const result = await run(key, 'listings', file, '--merge', '--report', report, '--quiet');
    expect(result.code, result.stderr).toBe(1);
    expect(result.stdout).toMatch(/^listings: 5 rows read, 1 inserted, 1 updated, 1 unchanged, 2 failed, 1 batches, [\d.]+ s\n$/);
    const missing = 'title: required; description: required; currency: required; category: required; material: required; photo_urls: required';
    // note: NEW-1's failure comes from the worker, which alone knows the account has no such row; line 3 never left the CLI
    expect(await readFile(report, 'utf8')).toBe(
      [
        'line,reason,field,code,external_id',
        ...['title', 'description', 'currency', 'category', 'material', 'photo_urls'].map((field) => `2,${missing},${field},required,NEW-1`),
        '3,external_id: required with update=merge,external_id,required,',
      ].join('\n') + '\n',
    );
    const rows = await stored(account);
    expect(rows.map((row) => [row.external_id, row.color])).toEqual([
      ['NEW-2', null],
      ['P-0', null],
      ['P-1', 'red'],
    ]);
  });

  it('--dry-run checks rows with the merge rules and sends nothing; --dry-run=server asks the server with update=merge and writes nothing', async () => {
    const { account, key } = await newPartner(cli.service);
    await seed(key, 'D', 2);
    const file = join(cli.dir, 'dry.ndjson');
    await writeFile(file, [{ external_id: 'D-0', price_cents: 1 }, { external_id: 'D-1', price_cents: 2500 }, { external_id: 'D-9', price_cents: 3 }, { price_cents: 4 }].map((row) => JSON.stringify(row)).join('\n') + '\n');

    const local = await runPartnerCli(['listings', file, '--merge', '--dry-run', '--json']);
    expect(local.code).toBe(1);
    expect(JSON.parse(local.stdout)).toMatchObject({ dry_run_mode: 'local', update: 'merge', rows_read: 4, valid: 3, failed: 1 });
    expect(local.stderr).toContain('line 4: external_id: required with update=merge');

    const server = await run(key, 'listings', file, '--merge', '--dry-run=server', '--json', '--quiet');
    expect(server.code).toBe(1);
    expect(JSON.parse(server.stdout)).toMatchObject({ dry_run_mode: 'server', update: 'merge', rows_read: 4, inserted: 0, updated: 1, unchanged: 1, failed: 2 });
    expect(server.stderr).toContain('line 3: title: required');
    expect((await stored(account)).map((row) => row.price_cents)).toEqual([2500, 2500]);
    expect(await storedFor(cli.service, account)).toMatchObject({ imports: 1 });
  });

  it('--background --merge sends the file as a merged file import: machines change only the nickname they carry', async () => {
    const { account, key } = await newPartner(cli.service);
    const machines = [validMachine({ external_id: 'PR-1', nickname: 'Old' }), validMachine({ external_id: 'PR-2', nickname: 'Old' })];
    expect((await postBulk(cli.service, 'machines', key, { machines })).statusCode).toBe(201);
    const file = join(cli.dir, 'nicknames.ndjson');
    await writeFile(file, `${JSON.stringify({ external_id: 'PR-1', nickname: 'Benchy' })}\n`);
    const result = await run(key, 'machines', file, '--background', '--merge', '--json', '--quiet');
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ update: 'merge', rows_read: 1, updated: 1, failed: 0, import_state: 'completed', removal: null });
    const rows = await cli.service.sql<{ external_id: string; nickname: string; model: string }[]>`
      select external_id, nickname, model from machines where account_id = ${account.id} order by external_id`;
    expect(rows).toEqual([
      { external_id: 'PR-1', nickname: 'Benchy', model: machines[0]!.model },
      { external_id: 'PR-2', nickname: 'Old', model: machines[1]!.model },
    ]);
  });
});
