import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Pool } from 'undici';
import { loadConfig } from '../src/shared/config.js';
import { createSql } from '../src/shared/db.js';
import { IMPORT_QUEUE_NAME, type ImportJobData } from '../src/shared/import-queue.js';
import { encodeImportRows, writeImport } from '../src/shared/repositories/imports.js';
import { ListingRowSchema } from '../src/shared/rows/listing-row.js';
import { validateRows } from '../src/shared/rows/validate-rows.js';
import { listingRows } from './lib/rows.js';
import { startStack } from './lib/stack.js';
import { cpuSplit, pidsNamed } from './lib/cpu.js';
import { runLoad } from './lib/load.js';
import { percentile, round, type LoadResult } from './lib/stats.js';

/**
 * `npm run bench:phases`: where the time of one import goes, from the timestamps BullMQ keeps
 * on each job (added, picked up, finished) next to the client's latency, at concurrency 1; then
 * the CPU each process spends per import at concurrency 8, where the two cores are the limit.
 */
const stack = await startStack({ workers: 1, accounts: 10, keysPerAccount: 1 });
try {
  const pool = new Pool(stack.api.baseUrl, { connections: 1 });
  const bodies = Array.from({ length: 4 }, (_, s) => JSON.stringify({ listings: listingRows(200, s) }));
  const connection = new Redis(stack.env.REDIS_URL);
  const queue = new Queue<ImportJobData>(IMPORT_QUEUE_NAME, { connection, prefix: stack.env.REDIS_PREFIX });
  const phases: Record<string, number[]> = { client: [], beforeAdd: [], queued: [], processing: [], afterFinish: [] };
  for (let i = 0; i < 120; i += 1) {
    const account = stack.accounts[i % stack.accounts.length]!;
    const sent = Date.now();
    const res = await pool.request({
      path: '/v1/api/listings/bulk',
      method: 'POST',
      headers: { authorization: `Bearer ${account.keys[0]}`, 'content-type': 'application/json', 'x-request-id': `phase-${i}` },
      body: bodies[i % 4],
    });
    await res.body.text();
    const received = Date.now();
    if (i < 20) continue; // warm-up
    const [job] = (await queue.getJobs(['completed'], 0, 0, false)).filter((j) => j.data.requestId === `phase-${i}`);
    if (!job?.processedOn || !job.finishedOn) continue;
    phases.client!.push(received - sent);
    phases.beforeAdd!.push(job.timestamp - sent);
    phases.queued!.push(job.processedOn - job.timestamp);
    phases.processing!.push(job.finishedOn - job.processedOn);
    phases.afterFinish!.push(received - job.finishedOn);
  }
  for (const [name, values] of Object.entries(phases)) {
    const sorted = values.sort((a, b) => a - b);
    console.log(`${name.padEnd(12)} p50 ${round(percentile(sorted, 50))} ms  p99 ${round(percentile(sorted, 99))} ms  (n=${sorted.length})`);
  }
  await queue.close();
  connection.disconnect();
  await pool.close();

  const imports = 400;
  const loaded = new Pool(stack.api.baseUrl, { connections: 8 });
  const run = async (index: number) => {
    const account = stack.accounts[index % stack.accounts.length]!;
    const res = await loaded.request({
      path: '/v1/api/listings/bulk',
      method: 'POST',
      headers: { authorization: `Bearer ${account.keys[0]}`, 'content-type': 'application/json' },
      body: bodies[index % 4],
    });
    await res.body.text();
    return res.statusCode;
  };
  await runLoad({ concurrency: 8, operations: 40, rowsPerOperation: 200, run }); // warm-up
  let load: LoadResult | undefined;
  const used = await cpuSplit(
    {
      api: () => [stack.api.child.pid!],
      worker: () => stack.workers.map((w) => w.child.pid!),
      redis: () => pidsNamed('redis-server'),
      postgres: () => pidsNamed('postgres'),
      'load generator': () => [process.pid],
    },
    async () => {
      load = await runLoad({ concurrency: 8, operations: imports, rowsPerOperation: 200, run });
    },
  );
  await loaded.close();
  console.log(`\nc=8, ${imports} imports of 200 listings: ${load!.requestsPerSec} req/s, errors ${load!.errors}; CPU per import:`);
  for (const [name, ms] of Object.entries(used)) console.log(`${name.padEnd(16)} ${round(ms / imports)} ms`);

  // The floor the same way: the insert code called directly from this process.
  const sql = createSql({ ...loadConfig({ ...process.env, DATABASE_URL: stack.env.DATABASE_URL }), databasePoolMax: 8 });
  const rows = Array.from({ length: 4 }, (_, s) => validateRows(ListingRowSchema, listingRows(200, s)).rows);
  const direct = async (index: number) => {
    const batch = rows[index % 4]!;
    const account = stack.accounts[index % stack.accounts.length]!;
    await writeImport(sql, {
      kind: 'listings', rowCount: batch.length, rowsJson: encodeImportRows(batch), jobId: randomUUID(),
      accountId: account.id, requestId: 'floor', total: batch.length, errors: [],
    });
    return 200;
  };
  await runLoad({ concurrency: 8, operations: 40, rowsPerOperation: 200, run: direct }); // warm-up
  let floor: LoadResult | undefined;
  const floorUsed = await cpuSplit(
    { postgres: () => pidsNamed('postgres'), 'floor client': () => [process.pid] },
    async () => {
      floor = await runLoad({ concurrency: 8, operations: imports, rowsPerOperation: 200, run: direct });
    },
  );
  await sql.end({ timeout: 5 });
  console.log(`\nfloor c=8, ${imports} direct writes: ${floor!.requestsPerSec} req/s; CPU per import:`);
  for (const [name, ms] of Object.entries(floorUsed)) console.log(`${name.padEnd(16)} ${round(ms / imports)} ms`);
} finally {
  await stack.close();
}
