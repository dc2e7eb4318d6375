import { randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { newPartner, postBulk } from '../../support/bulk-endpoint.js';
import { startCliService, type CliService } from '../../support/cli-service.js';
import { bearer, validListing, validMachine } from '../../support/fixtures.js';
import { runPartnerCli, startPartnerCli, WELL_FORMED_KEY } from '../../support/partner-cli.js';
import type { TestAccount, TestService } from '../../support/test-service.js';
import { Worker } from 'bullmq';
import { IMPORT_QUEUE_NAME } from '../../../src/shared/import/import-queue.js';
import type { AnyImportJobData, AnyImportResult } from '../../../src/shared/import/row-removal-job.js';
import { ImportRowsStore } from '../../../src/shared/import/rows-store.js';
import { createRedis } from '../../../src/shared/infra/redis.js';
import { createImportProcessor } from '../../../src/worker/import-processor.js';

/** Creates `count` listings with the external_ids `<prefix>-<n>` through the bulk endpoint (200 a request). */
async function seedListings(service: TestService, key: string, prefix: string, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
  for (let at = 0; at < count; at += 200) {
    const res = await postBulk(service, 'listings', key, { listings: ids.slice(at, at + 200).map((id) => validListing({ external_id: id })) });
    expect(res.statusCode).toBe(201);
  }
  return ids;
}

async function countsOf(service: TestService, account: TestAccount, kind = 'listings') {
  const [counts] = await service.sql<{ active: number; archived: number }[]>`
    select (count(*) filter (where archived_at is null))::int as active, (count(*) filter (where archived_at is not null))::int as archived
    from ${service.sql(kind)} where account_id = ${account.id}`;
  return counts!;
}

/** `bulk-import listings|machines archive|delete FILE` against a real API and worker (docs/partner-cli.md#archive-and-delete). */
describe('bulk-import <kind> archive|delete', () => {
  let cli: CliService;
  let service: TestService;

  beforeAll(async () => {
    cli = await startCliService('bulk-import-removal-');
    service = cli.service;
  });
  afterAll(async () => {
    await cli?.close();
  });

  const requests = (url: string) => service.logs.filter((line) => line['msg'] === 'request completed' && line['method'] === 'POST' && line['url'] === url).length;

  it('archives a file of external_ids in batches of 1,000, reports the failed lines, and archiving again counts them already archived', async () => {
    const { account, key } = await newPartner(service);
    const other = await newPartner(service);
    const ids = await seedListings(service, key, 'ARC', 1_050);
    await seedListings(service, other.key, 'THEIRS', 1);
    // line 2: a duplicate of line 1; 4: blank (skipped); 6: too long; 1,054: another account's row
    const lines = [ids[0], ids[0], ids[1], '   ', ...ids.slice(2, 3), 'x'.repeat(101), ...ids.slice(3), 'THEIRS-0', ''];
    const file = join(cli.dir, 'archive.txt');
    await writeFile(file, lines.join('\r\n'));
    const report = join(cli.dir, 'archive-report.csv');
    const before = requests('/v1/api/listings/bulk-archive');

    const first = await runPartnerCli(['listings', 'archive', file, '--api-key', key, '--base-url', cli.baseUrl, '--report', report, '--json']);

    expect(first.code, first.stderr).toBe(1);
    expect(JSON.parse(first.stdout)).toMatchObject({
      kind: 'listings',
      action: 'archive',
      entries_read: 1_053,
      valid: 1_051,
      archived: 1_050,
      unchanged: 0,
      failed: 3,
      unaccounted: 0,
      batches: 2,
      completed: true,
    });
    expect(requests('/v1/api/listings/bulk-archive') - before).toBe(2);
    expect(await readFile(report, 'utf8')).toBe(
      [
        'line,reason,field,code,external_id',
        `2,external_id: names the same row as an earlier line of this file,external_id,duplicate,${ids[0]}`,
        '6,external_id: must be at most 100 characters,external_id,too_long,',
        '1054,external_id: names no listing of this account,external_id,not_found,THEIRS-0',
      ].join('\n') + '\n',
    );
    expect(await countsOf(service, account)).toEqual({ active: 0, archived: 1_050 });
    expect(await countsOf(service, other.account)).toEqual({ active: 1, archived: 0 });

    const again = await runPartnerCli(['listings', 'archive', file, '--api-key', key, '--base-url', cli.baseUrl, '--quiet']);
    expect(again.code).toBe(1);
    expect(again.stdout).toMatch(/^listings archive: 1053 entries read, 0 archived, 1050 already archived, 3 failed, 2 batches, [\d.]+ s\n$/);
  });

  it('deletes by our ids with --ids (exit 0 when every entry is done), and a server dry run first changes nothing', async () => {
    const { account, key } = await newPartner(service);
    const res = await postBulk(service, 'machines', key, { machines: [validMachine(), validMachine(), validMachine({ external_id: 'M-1' })] });
    expect(res.statusCode).toBe(201);
    const rows = await service.sql<{ id: string }[]>`select id::text from machines where account_id = ${account.id}`;
    const file = join(cli.dir, 'ids.txt');
    await writeFile(file, `${rows.map((r) => r.id.toUpperCase()).join('\n')}\n`);

    const dryRun = await runPartnerCli(['machines', 'delete', file, '--ids', '--dry-run=server', '--api-key', key, '--base-url', cli.baseUrl, '--quiet']);
    expect(dryRun.code, dryRun.stderr).toBe(0);
    expect(dryRun.stdout).toMatch(/^machines delete: 3 entries read, would be 3 deleted, 0 failed, 1 batches, nothing changed \(server dry run\), [\d.]+ s\n$/);
    expect(await countsOf(service, account, 'machines')).toEqual({ active: 3, archived: 0 });

    const done = await runPartnerCli(['machines', 'delete', file, '--ids', '--api-key', key, '--base-url', cli.baseUrl, '--json', '--quiet']);
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({ action: 'delete', entries_read: 3, deleted: 3, failed: 0, batches: 1 });
    expect(await countsOf(service, account, 'machines')).toEqual({ active: 0, archived: 0 });

    // the same file again: every row is gone, so every entry names no row (400 "no valid rows")
    const report = join(cli.dir, 'ids-report.json');
    const gone = await runPartnerCli(['machines', 'delete', file, '--ids', '--api-key', key, '--base-url', cli.baseUrl, '--quiet', '--report', report]);
    expect(gone.code).toBe(1);
    const failures = JSON.parse(await readFile(report, 'utf8')) as { line: number; details: { code: string }[] }[];
    expect(failures.map((f) => [f.line, f.details[0]!.code])).toEqual([
      [1, 'not_found'],
      [2, 'not_found'],
      [3, 'not_found'],
    ]);
  });

  it('watches a batch answered 504 until its import ends, and counts its entries once, as the import did them', async () => {
    // No worker of its own: the test's worker holds the archive until the CLI watches its import.
    const late = await startCliService('bulk-import-removal-504-', { worker: false, env: { IMPORT_PICKUP_TIMEOUT_MS: '5000', IMPORT_TIMEOUT_MS: '500' } });
    const connection = createRedis(late.service.config, 'blocking');
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const write = createImportProcessor(late.service.deps.sql, new ImportRowsStore(connection, late.service.config.redisPrefix), late.service.deps.log);
    const worker = new Worker<AnyImportJobData, AnyImportResult>(
      IMPORT_QUEUE_NAME,
      async (job) => {
        if (job.data.kind === 'listings' && 'action' in job.data) await released;
        return write(job);
      },
      { connection, prefix: late.service.config.redisPrefix },
    );
    worker.on('error', () => undefined);
    try {
      const { account, key } = await newPartner(late.service);
      await seedListings(late.service, key, 'LATE', 3);
      const file = join(late.dir, 'late.txt');
      await writeFile(file, 'LATE-0\nLATE-1\nLATE-2\nLATE-9\n');
      const run = startPartnerCli(['listings', 'archive', file, '--api-key', key, '--base-url', late.baseUrl, '--json']);
      await vi.waitFor(() => expect(run.stderr()).toMatch(/504 Import is still running; check before retrying: watching import \S+ until it ends/), { timeout: 15_000, interval: 50 });
      // answered 504, the import reads running, as the archive it is (recorded unsettled)
      const importId = /watching import (\S+) until it ends/.exec(run.stderr())![1]!;
      const running = await late.service.request({ method: 'GET', url: `/v1/api/imports/${importId}`, headers: bearer(key) });
      expect(running.json()).toMatchObject({ state: 'running', action: 'archive', rows: { received: 4, skipped: 1, archived: 0 } });
      release();
      const result = await run.done;
      expect(result.code, result.stderr).toBe(1);
      expect(JSON.parse(result.stdout)).toMatchObject({ entries_read: 4, archived: 3, unchanged: 0, failed: 1, unaccounted: 0, batches: 1 });
      expect(result.stderr).toMatch(/import \S+ completed: its rows are counted once, as it wrote them/);
      expect(result.stderr).toContain('line 4: external_id: names no listing of this account');
      expect(await countsOf(late.service, account)).toEqual({ active: 0, archived: 3 });
      const posts = late.service.logs.filter((line) => line['msg'] === 'request completed' && line['url'] === '/v1/api/listings/bulk-archive').length;
      expect(posts).toBe(1);
    } finally {
      release();
      await worker.close();
      connection.disconnect();
      await late.close();
    }
  });

  describe('without a server', () => {
    it('--dry-run checks every line locally and sends nothing', async () => {
      const file = join(cli.dir, 'local.txt');
      await writeFile(file, `\uFEFFSKU-1\nSKU-2\n\nSKU-1\n${'y'.repeat(5_000)}\nnot-an-id\n`);
      const local = await runPartnerCli(['listings', 'archive', file, '--dry-run', '--json']);
      expect(local.code).toBe(1);
      expect(JSON.parse(local.stdout)).toMatchObject({ entries_read: 5, valid: 3, failed: 2, batches: 0, dry_run_mode: 'local' });
      expect(local.stderr).toContain('line 4: external_id: names the same row as an earlier line of this file');
      expect(local.stderr).toContain('line 5: external_id: line longer than 4096 bytes');

      const ids = await runPartnerCli(['listings', 'delete', file, '--ids', '--dry-run', '--json']);
      expect(JSON.parse(ids.stdout)).toMatchObject({ entries_read: 5, valid: 0, failed: 5 });
      expect(ids.stderr).toContain('line 1: id: must be an id of ours (a UUID)');
    });

    it.each([
      [['listings', 'archive'], 'FILE is required'],
      [['listings', 'archive', 'a.txt', 'b.txt'], 'unexpected arguments: b.txt'],
      [['listings', 'delete', 'a.txt', '--dry-run=later'], '--dry-run takes local or server'],
      [['listings', 'delete', 'a.txt', '--report', 'r.txt', '--api-key', WELL_FORMED_KEY, '--base-url', 'http://127.0.0.1:9'], '--report must name a .csv or .json file'],
      [['--quiet', 'machines', 'archive', 'a.txt'], 'archive comes right after the kind'],
    ])('%j: usage error, exit 2', async (args, message) => {
      const result = await runPartnerCli(args);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(message);
    });

    it('stops with exit 2 when the server cannot be reached, every entry unsent', async () => {
      const file = join(cli.dir, 'unreachable.txt');
      await writeFile(file, `${randomUUID()}\n`);
      const result = await runPartnerCli(['listings', 'archive', file, '--api-key', WELL_FORMED_KEY, '--base-url', 'http://127.0.0.1:9', '--retries', '1', '--quiet']);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/gave up after 1 attempts/);
    });
  });
});
