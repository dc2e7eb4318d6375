import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { createFaultScenario, type FaultScenario } from '../support/fault-scenario.js';
import type { ServiceProcess } from '../support/processes.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface CliRun {
  child: ChildProcess;
  /** stderr so far */
  stderr(): string;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

/**
 * Runs the partner CLI as its own process, the way a partner does. `via: 'bin'` goes through
 * the package's bin launcher (`npx bulk-import`); the default runs the TypeScript entry
 * through tsx directly, which is what the launcher does when there is no build.
 */
function runCli(args: string[], env: Record<string, string> = {}, via: 'bin' | 'tsx' = 'tsx'): CliRun {
  const command = via === 'bin' ? ['bin/bulk-import.js'] : ['--import', 'tsx', 'src/cli/bulk-import.ts'];
  const child = spawn(process.execPath, [...command, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, BULK_IMPORT_API_KEY: '', BULK_IMPORT_BASE_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
  return { child, stderr: () => stderr, done };
}

let serial = 0;
function listing(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  serial += 1;
  return {
    title: `CLI listing ${serial}`,
    description: 'Printed in silk PLA and checked by hand.',
    price_cents: 1_000 + serial,
    currency: 'USD',
    category: 'miniatures',
    material: 'PLA',
    photo_urls: [`https://cdn.example.test/${serial}-a.jpg`, `https://cdn.example.test/${serial}-b.jpg`],
    tags: ['dragon', 'flexi'],
    ...overrides,
  };
}

function machine(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  serial += 1;
  return { template_id: `tpl-${serial}`, category: 'fdm', manufacturer: 'Prusa Research', model: 'MK4', capabilities: ['pla', 'petg'], ...overrides };
}

const LISTING_COLUMNS = ['title', 'description', 'price_cents', 'currency', 'category', 'material', 'photo_urls', 'tags'] as const;

function csvCell(value: unknown): string {
  const text = Array.isArray(value) ? value.join('|') : typeof value === 'string' || typeof value === 'number' ? String(value) : '';
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function listingsCsv(rows: Record<string, unknown>[], eol = '\n'): string {
  return [LISTING_COLUMNS.join(','), ...rows.map((row) => LISTING_COLUMNS.map((c) => csvCell(row[c])).join(','))].join(eol) + eol;
}

describe('partner CLI against a real API and worker', () => {
  let scenario: FaultScenario;
  let api: ServiceProcess & { baseUrl: string };
  let worker: ServiceProcess;
  let dir: string;
  let cliEnv: Record<string, string>;

  const tableCounts = async () => {
    const [row] = await scenario.sql<{ listings: number; machines: number; imports: number }[]>`
      select (select count(*)::int from listings) as listings, (select count(*)::int from machines) as machines,
             (select count(*)::int from imports where state = 'completed') as imports`;
    return row!;
  };
  /** Titles (or template ids) stored more than once: must always be none. */
  const duplicates = async () => {
    const listings = await scenario.sql`select title from listings group by title having count(*) > 1`;
    const machines = await scenario.sql`select template_id from machines group by template_id having count(*) > 1`;
    return [...listings, ...machines];
  };

  beforeAll(async () => {
    scenario = await createFaultScenario({ IMPORT_PICKUP_TIMEOUT_MS: '15000' });
    api = await scenario.startApi();
    worker = await scenario.startWorker();
    dir = await mkdtemp(join(tmpdir(), 'partner-cli-'));
    cliEnv = { BULK_IMPORT_API_KEY: scenario.apiKey, BULK_IMPORT_BASE_URL: api.baseUrl };
  });

  afterAll(async () => {
    await scenario?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  beforeEach(async () => {
    await scenario.sql`truncate listings, machines, imports, import_file_chunks, import_file_external_ids, import_file_errors, import_file_seen_ids, unsettled_imports, idempotency_keys, import_row_outcomes`;
  });

  it('CSV with invalid rows: exit 1, the report names each bad line and reason, the valid rows are in once', async () => {
    const rows = Array.from({ length: 450 }, () => listing());
    rows[3] = listing({ description: 'Two-line\r\ndescription, with a comma' }); // a quoted cell over two lines
    rows[10] = listing({ price_cents: 12.5 });
    rows[200] = listing({ currency: 'EUR', photo_urls: ['http://cdn.example.test/x.jpg'] });
    rows[449] = listing({ title: '' });
    const file = join(dir, 'listings.csv');
    await writeFile(file, `\uFEFF${listingsCsv(rows, '\r\n')}`);
    const report = join(dir, 'listings-report.csv');

    const result = await runCli(['listings', file, '--report', report], cliEnv).done;

    expect(result.code, result.stderr).toBe(1);
    expect(result.stdout).toMatch(/^listings: 450 rows read, 447 inserted, 3 failed, 3 batches, [\d.]+ s\n$/);
    // row i is on line i + 2 (header first), plus one after the two-line record of row 3
    expect(await readFile(report, 'utf8')).toBe(
      [
        'line,reason,field,code,external_id',
        '13,price_cents: must be a whole number,price_cents,not_whole_number,',
        '203,currency: must be exactly USD; photo_urls[0]: must be an absolute https:// URL,currency,not_allowed,',
        '203,currency: must be exactly USD; photo_urls[0]: must be an absolute https:// URL,photo_urls[0],invalid_url,',
        '452,title: required,title,required,',
      ].join('\n') + '\n',
    );
    expect(await tableCounts()).toMatchObject({ listings: 447, imports: 3 });
    expect(await duplicates()).toEqual([]);
    const [stored] = await scenario.sql`select description, tags, photo_urls, thumbnail_url from listings where title = ${rows[3]!.title as string}`;
    expect(stored).toMatchObject({ description: 'Two-line\r\ndescription, with a comma', tags: ['dragon', 'flexi'], thumbnail_url: (rows[3]!.photo_urls as string[])[0] });
  });

  it('NDJSON and JSON files of machines: batches of 500, bad lines reported, every valid row in once', async () => {
    const ndjsonRows = Array.from({ length: 1_100 }, () => JSON.stringify(machine()));
    ndjsonRows[5] = '{"template_id": "broken",';
    ndjsonRows[700] = JSON.stringify(machine({ model: '   ' }));
    const ndjson = join(dir, 'machines.ndjson');
    await writeFile(ndjson, `${ndjsonRows.join('\n')}\n`);
    const ndjsonReport = join(dir, 'machines-report.json');
    const first = await runCli(['machines', ndjson, '--report', ndjsonReport, '--json'], cliEnv).done;
    expect(first.code, first.stderr).toBe(1);
    expect(JSON.parse(first.stdout)).toMatchObject({ rows_read: 1_100, inserted: 1_098, failed: 2, batches: 3, completed: true });
    expect(JSON.parse(await readFile(ndjsonReport, 'utf8'))).toEqual([
      { line: 6, reason: expect.stringMatching(/^invalid JSON: /), details: [] },
      { line: 701, reason: 'model: required', details: [{ field: 'model', code: 'required', message: 'required' }] },
    ]);

    const json = join(dir, 'machines.json');
    await writeFile(json, JSON.stringify(Array.from({ length: 600 }, () => machine()), null, 2));
    const second = await runCli(['machines', json, '--report', join(dir, 'machines-json-report.csv')], cliEnv).done;
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/^machines: 600 rows read, 600 inserted, 0 failed, 2 batches/);
    expect(await readFile(join(dir, 'machines-json-report.csv'), 'utf8')).toBe('index,reason,field,code,external_id\n');

    expect(await tableCounts()).toMatchObject({ machines: 1_698, imports: 5 });
    expect(await duplicates()).toEqual([]);
    const [pending] = await scenario.sql`select count(*)::int as n from machines where verification_status = 'pending'`;
    expect(pending!.n).toBe(1_698);
  });

  it('--dry-run through the bin launcher sends nothing and reports the invalid lines', async () => {
    const rows = Array.from({ length: 300 }, () => listing());
    rows[0] = listing({ category: 'toys' });
    const file = join(dir, 'dry.csv');
    await writeFile(file, listingsCsv(rows));
    const report = join(dir, 'dry-report.csv');
    // note: a wrong base URL proves nothing is sent; a dry run needs neither URL nor key.
    const result = await runCli(['listings', file, '--dry-run', '--report', report], { BULK_IMPORT_BASE_URL: 'http://127.0.0.1:9' }, 'bin').done;
    expect(result.code, result.stderr).toBe(1);
    expect(result.stdout).toMatch(/^listings: 300 rows read, 299 valid, 1 failed, nothing sent \(dry run\)/);
    expect(await readFile(report, 'utf8')).toMatch(/^line,reason,field,code,external_id\n2,"category: must be one of: miniatures, [^"]*",category,not_allowed,\n$/);
    expect(await tableCounts()).toEqual({ listings: 0, machines: 0, imports: 0 });
  });

  it('a nightly sync, each step its own process as a cron job runs it: the day\'s prices merged, a mirror archives the row it leaves out (exit 0), a cut-short export is held (exit 1)', async () => {
    const rows = Array.from({ length: 20 }, (_, i) => listing({ external_id: `NIGHT-${i}` }));
    const file = join(dir, 'catalogue.ndjson');
    const write = async (lines: Record<string, unknown>[]) => writeFile(file, `${lines.map((row) => JSON.stringify(row)).join('\n')}\n`);
    await write(rows);
    expect((await runCli(['listings', file, '--quiet'], cliEnv).done).code).toBe(0);

    await write([{ external_id: 'NIGHT-0', price_cents: 1 }]);
    const merged = await runCli(['listings', file, '--merge', '--quiet'], cliEnv).done;
    expect(merged.code, merged.stderr).toBe(0);
    expect(merged.stdout).toMatch(/^listings: 1 rows read, 0 inserted, 1 updated, 0 unchanged, 0 failed, 1 batches/);

    await write([{ ...rows[0], price_cents: 1 }, ...rows.slice(1, 19)]);
    const mirrored = await runCli(['listings', file, '--background', '--mirror', '--quiet'], cliEnv).done;
    expect(mirrored.code, mirrored.stderr).toBe(0);
    expect(mirrored.stdout).toMatch(/ 19 unchanged, 0 failed, import [\w-]+ completed, removal done: 1 archived, /);

    await write(rows.slice(0, 3));
    const cut = await runCli(['listings', file, '--background', '--mirror', '--quiet'], cliEnv).done;
    expect(cut.code, cut.stderr).toBe(1);
    expect(cut.stdout).toMatch(/removal held: 16 would have been archived, nothing removed/);
    expect(cut.stderr).toMatch(/^note: import [\w-]+: the mirror did not take effect: nothing was removed/m);
    const [state] = await scenario.sql<{ active: number; archived: string[] }[]>`
      select count(*) filter (where archived_at is null)::int as active, array_agg(external_id) filter (where archived_at is not null) as archived from listings`;
    expect(state).toEqual({ active: 19, archived: ['NIGHT-19'] });
  });

  it('429: waits out the minute window the account has used up, then finishes with every row in once', async () => {
    // An account of its own with 5 requests left in a window that ends in 8 s; the file needs 8.
    // note: its own, because the API keeps a share of a busy account's minute window
    // (quota-leases.ts), which the tests before this one leave it holding for the scenario's
    // account: a counter set in Redis is then not what the API reads first.
    const partner = await scenario.addPartner('Rate Limited');
    const redis = new Redis(inject('redisUrl'));
    await redis.set(`${scenario.env.REDIS_PREFIX}:quota-minute:${partner.accountId}`, '995', 'PX', 8_000);
    await redis.quit();
    const file = join(dir, 'rate.ndjson');
    await writeFile(file, `${Array.from({ length: 1_600 }, () => JSON.stringify(listing())).join('\n')}\n`);

    const started = Date.now();
    const result = await runCli(['listings', file], { ...cliEnv, BULK_IMPORT_API_KEY: partner.apiKey }).done;

    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/429 Rate limit exceeded \(per-minute\); waiting [\d.]+ s \(Retry-After\)/);
    expect(result.stdout).toMatch(/^listings: 1600 rows read, 1600 inserted, 0 failed, 8 batches/);
    expect(Date.now() - started).toBeGreaterThan(1_500);
    expect(await tableCounts()).toMatchObject({ listings: 1_600, imports: 8 });
    expect(await duplicates()).toEqual([]);
  });

  it('API killed mid-file and restarted on the same port: the CLI retries and every row is in exactly once', async () => {
    const file = join(dir, 'restart.json');
    await writeFile(file, JSON.stringify(Array.from({ length: 6_000 }, () => listing())));
    const port = new URL(api.baseUrl).port;

    const cli = runCli(['listings', file], cliEnv);
    // Wait until the first batches are in, then kill the API without warning.
    const deadline = Date.now() + 30_000;
    while ((await tableCounts()).listings < 400) {
      if (Date.now() > deadline) throw new Error(`no progress: ${cli.stderr()}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await api.stop('SIGKILL');
    const atKill = (await tableCounts()).listings;
    expect(atKill).toBeLessThan(6_000);
    api = await scenario.startApi({ PORT: port });

    const result = await cli.done;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/attempt 1 of 8 failed \(fetch failed/);
    expect(result.stdout).toMatch(/^listings: 6000 rows read, 6000 inserted, 0 failed, 30 batches/);
    expect(await tableCounts()).toMatchObject({ listings: 6_000, imports: 30 });
    expect(await duplicates()).toEqual([]);
    console.info(`restart: API killed with ${atKill} of 6000 listings in`);
  });

  it('a reply lost while its import runs: the retry with the same Idempotency-Key gets that import, never a second copy', async () => {
    await worker.stop();
    const paused = await scenario.startWorker({ FAULT_INJECTION: 'pause-before-commit' });
    const file = join(dir, 'lost-reply.ndjson');
    await writeFile(file, `${Array.from({ length: 600 }, () => JSON.stringify(listing())).join('\n')}\n`);
    const port = new URL(api.baseUrl).port;

    const cli = runCli(['listings', file, '--json'], cliEnv);
    // The first batch's rows are inserted but not committed; the CLI is waiting for the reply.
    await paused.waitForOutput(/pausing inside the transaction/);
    await api.stop('SIGKILL');
    await paused.stop('SIGKILL');
    worker = await scenario.startWorker();
    api = await scenario.startApi({ PORT: port });

    const result = await cli.done;
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ rows_read: 600, inserted: 600, failed: 0, batches: 3, replayed_batches: 1 });
    expect(await tableCounts()).toMatchObject({ listings: 600, imports: 3 });
    expect(await duplicates()).toEqual([]);
  });
});
