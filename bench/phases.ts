import { randomUUID } from 'node:crypto';
import { Pool } from 'undici';
import { loadConfig } from '../src/shared/infra/config.js';
import { createSql, type Sql } from '../src/shared/infra/db.js';
import { IMPORT_STEPS, type ImportStepEvent } from '../src/shared/import/import-steps.js';
import { writeImport } from '../src/worker/write-import.js';
import { encodeImportRows } from '../src/shared/import/rows-hand-over.js';
import { ListingRowSchema } from '../src/shared/rows/listing-row.js';
import { validateRows } from '../src/shared/rows/validate-rows.js';
import { listingRows } from './lib/rows.js';
import { startStack } from './lib/stack.js';
import { startDirectInsertServer } from './lib/direct-insert-process.js';
import { loadableGetTarget } from './lib/get-target.js';
import { cpuSplit, pidsNamed } from './lib/cpu.js';
import { runLoad } from './lib/load.js';
import { percentile, round, type LoadResult } from './lib/stats.js';

/**
 * `npm run bench:phases`: where the time of one import goes, step by step across the client, the
 * API and the worker, at concurrency 1 (the steps the service publishes on a diagnostics channel,
 * written out by bench/lib/step-recorder.js, on the clock the processes share), next to the
 * floor's latency; then the CPU each process spends per import at concurrency 8, where the two
 * cores are the limit (the recorder's own writes, nine short lines per import, included), and
 * the same for the direct-insert service that `--only=direct` compares us with; last, the CPU per
 * request of `GET /v1/api/me` and of the bare route at concurrency 32.
 */
// note: 40 accounts of three keys, so that the /me requests stay under each account's per-minute quota.
const stack = await startStack({ workers: 1, accounts: 40, keysPerAccount: 3, nodeArgs: ['--import', './bench/lib/step-recorder.js'] });
const now = () => performance.timeOrigin + performance.now();
try {
  const pool = new Pool(stack.api.baseUrl, { connections: 1 });
  const bodies = Array.from({ length: 4 }, (_, s) => JSON.stringify({ listings: listingRows(200, s) }));
  const client = new Map<string, { sent: number; done: number }>();
  for (let i = 0; i < 220; i += 1) {
    const account = stack.accounts[i % stack.accounts.length]!;
    const requestId = `phase-${i}`;
    const sent = now();
    const res = await pool.request({
      path: '/v1/api/listings/bulk',
      method: 'POST',
      headers: { authorization: `Bearer ${account.keys[0]}`, 'content-type': 'application/json', 'x-request-id': requestId },
      body: bodies[i % 4],
    });
    await res.body.text();
    if (i >= 20) client.set(requestId, { sent, done: now() }); // the first 20 warm up
  }
  await pool.close();
  const steps = new Map<string, Partial<Record<string, number>>>();
  for (const line of [...stack.api.output, ...stack.workers.flatMap((w) => w.output)]) {
    if (!line.startsWith('{"importStep"')) continue;
    const { importStep } = JSON.parse(line) as { importStep: ImportStepEvent };
    if (!client.has(importStep.requestId)) continue;
    steps.set(importStep.requestId, { ...steps.get(importStep.requestId), [importStep.step]: importStep.at });
  }
  const order = ['client.sent', ...IMPORT_STEPS, 'client.done'];
  const spans = new Map<string, number[]>(order.slice(1).map((step, i) => [`${order[i]} -> ${step}`, []]));
  const totals: number[] = [];
  for (const [requestId, { sent, done }] of client) {
    const at: Partial<Record<string, number>> = { 'client.sent': sent, ...steps.get(requestId), 'client.done': done };
    if (order.some((step) => at[step] === undefined)) continue;
    order.slice(1).forEach((step, i) => spans.get(`${order[i]} -> ${step}`)!.push(at[step]! - at[order[i]!]!));
    totals.push(done - sent);
  }
  console.log(`one 200-listing import at c=1, ${totals.length} imports, ms between steps:`);
  const show = (name: string, values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    console.log(`${name.padEnd(40)} p50 ${String(round(percentile(sorted, 50))).padStart(6)}  p99 ${String(round(percentile(sorted, 99))).padStart(6)}`);
  };
  for (const [name, values] of spans) show(name, values);
  show('total', totals);

  // The floor: the insert code called directly from this process, with the same rows.
  const floorRows = Array.from({ length: 4 }, (_, s) => validateRows(ListingRowSchema, listingRows(200, s)).rows);
  const config = loadConfig({ ...process.env, DATABASE_URL: stack.env.DATABASE_URL });
  const directWrites = (sql: Sql) => async (index: number) => {
    const batch = floorRows[index % 4]!;
    await writeImport(sql, {
      kind: 'listings', rowCount: batch.length, rowsJson: encodeImportRows(batch), jobId: randomUUID(),
      accountId: stack.accounts[index % stack.accounts.length]!.id, requestId: 'floor', total: batch.length, errors: [],
    });
    return 200;
  };
  const floorSql = createSql({ ...config, databasePoolMax: 1 });
  await runLoad({ concurrency: 1, operations: 20, rowsPerOperation: 200, run: directWrites(floorSql) }); // warm-up
  const floorC1 = await runLoad({ concurrency: 1, operations: 200, rowsPerOperation: 200, run: directWrites(floorSql) });
  await floorSql.end({ timeout: 5 });
  console.log(`floor (the same insert code called directly), c=1: p50 ${floorC1.p50Ms} ms  p99 ${floorC1.p99Ms} ms`);

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

  // The floor the same way.
  const sql = createSql({ ...config, databasePoolMax: 8 });
  const direct = directWrites(sql);
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

  // The reference of issue 24's ratios, the direct-insert service (`npm run bench -- --only=direct`),
  // the same way: where its CPU goes tells whether the gap is in our processes or in PostgreSQL.
  const reference = await startDirectInsertServer(stack.env);
  try {
    const toReference = new Pool(reference.baseUrl, { connections: 8 });
    const send = async (index: number) => {
      const account = stack.accounts[index % stack.accounts.length]!;
      const res = await toReference.request({
        path: '/v1/api/listings/bulk',
        method: 'POST',
        headers: { authorization: `Bearer ${account.keys[0]}`, 'content-type': 'application/json' },
        body: bodies[index % 4],
      });
      await res.body.text();
      return res.statusCode;
    };
    await runLoad({ concurrency: 8, operations: 40, rowsPerOperation: 200, run: send }); // warm-up
    let referenceLoad: LoadResult | undefined;
    const referenceUsed = await cpuSplit(
      { 'direct service': () => [reference.child.pid!], postgres: () => pidsNamed('postgres'), 'load generator': () => [process.pid] },
      async () => {
        referenceLoad = await runLoad({ concurrency: 8, operations: imports, rowsPerOperation: 200, run: send });
      },
    );
    await toReference.close();
    console.log(`\ndirect-insert service c=8, ${imports} imports: ${referenceLoad!.requestsPerSec} req/s, errors ${referenceLoad!.errors}; CPU per import:`);
    for (const [name, ms] of Object.entries(referenceUsed)) console.log(`${name.padEnd(16)} ${round(ms / imports)} ms`);
  } finally {
    await reference.stop();
  }

  // GET /v1/api/me at c=32 beside the bare route (the third ratio), the same way: CPU per request.
  const bare = await stack.startBareServer();
  const me = loadableGetTarget({ name: 'me', baseUrl: stack.api.baseUrl, accounts: stack.accounts, path: () => '/v1/api/me', withKey: true, expected: 200 });
  const bareRoute = loadableGetTarget({ name: 'bare', baseUrl: bare.baseUrl, accounts: stack.accounts, path: () => '/bare', withKey: false, expected: 200 });
  const requests = 15_000;
  for (const [target, server] of [[me, { api: () => [stack.api.child.pid!], redis: () => pidsNamed('redis-server'), postgres: () => pidsNamed('postgres') }], [bareRoute, { 'bare route': () => [bare.child.pid!] }]] as const) {
    await runLoad({ concurrency: 32, operations: 2_000, rowsPerOperation: 0, run: target.run }); // warm-up
    let measured: LoadResult | undefined;
    const used = await cpuSplit({ ...server, 'load generator': () => [process.pid] }, async () => {
      measured = await runLoad({ concurrency: 32, operations: requests, rowsPerOperation: 0, run: target.run });
    });
    await target.pool.close();
    console.log(`\n${target === me ? 'GET /v1/api/me' : 'bare Fastify route'} c=32, ${requests} requests: ${measured!.requestsPerSec} req/s, errors ${measured!.errors}; CPU per request:`);
    for (const [name, ms] of Object.entries(used)) console.log(`${name.padEnd(16)} ${round((ms * 1000) / requests)} µs`);
  }
} finally {
  await stack.close();
}
