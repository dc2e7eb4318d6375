import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPartnerCli } from '../../support/partner-cli.js';
import type { TestService } from '../../support/test-service.js';
import { startCliService, type CliService } from '../../support/cli-service.js';
import { newPartner } from '../../support/bulk-endpoint.js';

const HEADER = 'external_id,title,description,price_cents,currency,category,material,photo_urls';
const line = (id: string, price = 2500, currency = 'USD') => `${id},Lamp,A fine print,${price},${currency},home_decor,PLA,https://cdn.example.test/lamp.jpg`;

/**
 * `bulk-import listings FILE --results out.csv` (docs/partner-cli.md#results): each row the server
 * took, at its line in the file, with our id and its outcome, from the batches' `?return=rows`.
 */
describe('bulk-import listings FILE --results', () => {
  let service: TestService;
  let baseUrl: string;
  let dir: string;
  let cli: CliService;

  beforeAll(async () => {
    cli = await startCliService('bulk-import-results-');
    ({ service, baseUrl, dir } = cli);
  });
  afterAll(async () => {
    await cli?.close();
  });

  it('writes line, external_id, id and outcome of every row taken, in file order across batches, the failed ones left to the report, cells escaped against formulas', async () => {
    const { account, key } = await newPartner(service);
    const file = join(dir, 'catalogue.csv');
    // 205 rows: two batches; line 4 (the third row) fails, and one id starts with = as a formula would
    const rows = Array.from({ length: 205 }, (_, i) => line(`SKU-${i}`));
    rows[2] = line('SKU-2', 2500, 'EUR');
    rows[203] = line('=SUM(A1)');
    await writeFile(file, [HEADER, ...rows].join('\n') + '\n');
    const results = join(dir, 'results.csv');
    const run = (...extra: string[]) => runPartnerCli(['listings', file, '--api-key', key, '--base-url', baseUrl, '--quiet', '--results', results, ...extra]);

    const first = await run();
    expect(first.code, first.stderr).toBe(1);
    const ids = new Map(
      (await service.sql<{ id: string; external_id: string }[]>`select id::text as id, external_id from listings where account_id = ${account.id}`).map((r) => [r.external_id, r.id]),
    );
    const written = (await readFile(results, 'utf8')).trimEnd().split('\n');
    expect(written[0]).toBe('line,external_id,id,outcome');
    expect(written).toHaveLength(1 + 204);
    expect(written[1]).toBe(`2,SKU-0,${ids.get('SKU-0')},inserted`);
    expect(written[2]).toBe(`3,SKU-1,${ids.get('SKU-1')},inserted`);
    expect(written[3]).toBe(`5,SKU-3,${ids.get('SKU-3')},inserted`);
    expect(written).toContain(`205,'=SUM(A1),${ids.get('=SUM(A1)')},inserted`);
    expect(written.at(-1)).toBe(`206,SKU-204,${ids.get('SKU-204')},inserted`);

    // the next night: one price changed; a server dry run answers what would happen
    rows[0] = line('SKU-0', 999);
    rows[2] = line('SKU-2');
    await writeFile(file, [HEADER, ...rows].join('\n') + '\n');
    const predicted = await run('--dry-run=server');
    expect(predicted.code, predicted.stderr).toBe(0);
    const predictedLines = (await readFile(results, 'utf8')).trimEnd().split('\n');
    expect(predictedLines.slice(1, 5)).toEqual([`2,SKU-0,${ids.get('SKU-0')},updated`, `3,SKU-1,${ids.get('SKU-1')},unchanged`, '4,SKU-2,,inserted', `5,SKU-3,${ids.get('SKU-3')},unchanged`]);
  });

  it('is refused with --background and with a local dry run, before anything is read', async () => {
    const { key } = await newPartner(service);
    const file = join(dir, 'one.csv');
    await writeFile(file, `${HEADER}\n${line('ONE')}\n`);
    const results = join(dir, 'refused.csv');
    const background = await runPartnerCli(['listings', file, '--api-key', key, '--base-url', baseUrl, '--background', '--results', results]);
    expect(background.code).toBe(2);
    expect(background.stderr).toMatch(/--results cannot be combined with --background/);
    const local = await runPartnerCli(['listings', file, '--dry-run', '--results', results]);
    expect(local.code).toBe(2);
    expect(local.stderr).toMatch(/--results needs rows sent/);
    const notCsv = await runPartnerCli(['listings', file, '--api-key', key, '--base-url', baseUrl, '--results', join(dir, 'out.json')]);
    expect(notCsv.code).toBe(2);
    expect(notCsv.stderr).toMatch(/--results must name a \.csv file/);
  });
});
