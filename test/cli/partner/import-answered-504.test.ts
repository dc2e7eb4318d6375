import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { UnrecoverableError, Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ImportJobData, ImportResult } from '../../../src/shared/import/import-job.js';
import { IMPORT_QUEUE_NAME } from '../../../src/shared/import/import-queue.js';
import { ImportRowsStore } from '../../../src/shared/import/rows-store.js';
import { createRedis } from '../../../src/shared/infra/redis.js';
import { recordImportNotWritten } from '../../../src/shared/repositories/import-records.js';
import { createImportProcessor } from '../../../src/worker/import-processor.js';
import { newPartner, storedFor } from '../../support/bulk-endpoint.js';
import { bearer, validListing } from '../../support/fixtures.js';
import { startPartnerCli } from '../../support/partner-cli.js';
import type { TestService } from '../../support/test-service.js';
import { startCliService, type CliService } from '../../support/cli-service.js';

type Verdict = 'write' | 'fail';

/**
 * A worker that holds the first import it takes until the test gives its verdict: `write` it, or
 * `fail` it for good, recorded `failed` as a worker records a job that failed for good (nothing
 * written). Every later import is written at once.
 */
function heldWorker(service: TestService) {
  let decide!: (verdict: Verdict) => void;
  const verdict = new Promise<Verdict>((resolve) => (decide = resolve));
  let taken = 0;
  const connection = createRedis(service.config, 'blocking');
  const write = createImportProcessor(service.deps.sql, new ImportRowsStore(connection, service.config.redisPrefix), service.deps.log);
  const worker = new Worker<ImportJobData, ImportResult>(
    IMPORT_QUEUE_NAME,
    async (job) => {
      taken += 1;
      if (taken === 1 && (await verdict) === 'fail') {
        const { accountId, kind, requestId, total, errors, createdAt } = job.data;
        await recordImportNotWritten(service.deps.sql, { importId: job.id!, accountId, kind, requestId, total, errors, createdAt });
        throw new UnrecoverableError('failed for good before writing');
      }
      return write(job);
    },
    { connection, prefix: service.config.redisPrefix },
  );
  worker.on('error', () => undefined);
  return {
    decide,
    async close() {
      decide('write');
      await worker.close();
      connection.disconnect();
    },
  };
}

/**
 * The partner CLI after a 504 (docs/partner-cli.md#an-import-answered-504): it reads the import the
 * 504 names until it ends, instead of sending the batch again, against a real API and worker.
 */
describe('bulk-import: an import answered 504', () => {
  let service: TestService;
  let baseUrl: string;
  let dir: string;

  let cli: CliService;

  beforeAll(async () => {
    // No worker of its own: each test holds the import in one of its own.
    cli = await startCliService('bulk-import-504-', { worker: false, env: { IMPORT_PICKUP_TIMEOUT_MS: '5000', IMPORT_TIMEOUT_MS: '500' } });
    ({ service, baseUrl, dir } = cli);
  });
  afterAll(async () => {
    await cli?.close();
  });

  /** Requests the API answered, by method and path (one completion line each). */
  const requests = (method: string, url: string) =>
    service.logs.filter((line) => line['msg'] === 'request completed' && line['method'] === method && line['url'] === url).length;

  /** Starts an import of three listings and waits until the CLI, answered 504, has read the import it names. */
  async function importAnswered504(key: string) {
    const file = join(dir, `${crypto.randomUUID()}.json`);
    await writeFile(file, JSON.stringify(Array.from({ length: 3 }, () => validListing())));
    const cli = startPartnerCli(['listings', file, '--api-key', key, '--base-url', baseUrl, '--quiet', '--json']);
    let id = '';
    await vi.waitFor(
      () => {
        const watching = /504 Import is still running; check before retrying: watching import (\S+) until it ends/.exec(cli.stderr());
        expect(watching, cli.stderr()).not.toBeNull();
        id = watching![1]!;
      },
      { timeout: 15_000, interval: 50 },
    );
    await vi.waitFor(() => expect(requests('GET', `/v1/api/imports/${id}`)).toBeGreaterThan(0), { timeout: 10_000, interval: 50 });
    const read = await service.request({ method: 'GET', url: `/v1/api/imports/${id}`, headers: bearer(key) });
    expect(read.json()).toMatchObject({ state: 'running' });
    return { cli, id };
  }

  it('completed: the rows are counted once, as the import wrote them, without sending the batch again (exit 0)', async () => {
    const { account, key } = await newPartner(service);
    const held = heldWorker(service);
    try {
      const { cli, id } = await importAnswered504(key);
      held.decide('write');
      const result = await cli.done;
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ rows_read: 3, inserted: 3, failed: 0, unaccounted: 0, batches: 1, replayed_batches: 0, completed: true });
      expect(result.stderr).toContain(`import ${id} completed: its rows are counted once, as it wrote them`);
      expect(requests('POST', '/v1/api/listings/bulk')).toBe(1);
      expect(await storedFor(service, account)).toMatchObject({ listings: 3, imports: 1 });
    } finally {
      await held.close();
    }
  });

  it('failed: nothing was written, so the batch is sent again with its key and imported once (exit 0)', async () => {
    const { account, key } = await newPartner(service);
    const held = heldWorker(service);
    const postsBefore = requests('POST', '/v1/api/listings/bulk');
    try {
      const { cli, id } = await importAnswered504(key);
      held.decide('fail');
      const result = await cli.done;
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ rows_read: 3, inserted: 3, failed: 0, unaccounted: 0, batches: 1, completed: true });
      expect(result.stderr).toMatch(new RegExp(`attempt 1 of 8 failed \\(504 .*; import ${id} then failed: nothing was written\\); retrying`));
      expect(requests('POST', '/v1/api/listings/bulk') - postsBefore).toBe(2);
      expect(await storedFor(service, account)).toMatchObject({ listings: 3, imports: 1 });
      const first = await service.request({ method: 'GET', url: `/v1/api/imports/${id}`, headers: bearer(key) });
      expect(first.json()).toMatchObject({ state: 'failed', rows: { inserted: 0 } });
    } finally {
      await held.close();
    }
  });
});
