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
import { httpImports } from './lib/http-imports.js';
import { cpuSplit, eventLoopOf, pidsNamed, type CpuSource } from './lib/cpu.js';
import { runLoad, type LoadOptions } from './lib/load.js';
import { percentile, round, type LoadResult } from './lib/stats.js';

/**
 * `npm run bench:phases`: where the time of one import goes, step by step across the client, the
 * API and the worker, at concurrency 1 (the steps the service publishes on a diagnostics channel,
 * written out by bench/lib/step-recorder.js, on the clock the processes share), next to the
 * floor's latency; then the CPU each process spends per import at concurrency 8, where the two
 * cores are the limit (the recorder's own writes, nine short lines per import, included), with
 * the total of every process but the load generator per 1,000 rows, and the same for the
 * direct-insert service that `--only=direct` compares us with, plain and writing
 * a record of each import with its rows; last, the CPU per request of `GET /v1/api/me` and of the
 * bare route at concurrency 32.
 */
/** 200-listing imports (`bodies` in turn) sent to `baseUrl` at c=8 (httpImports). */
function importsTo(baseUrl: string, bodies: readonly string[]) {
  const pool = new Pool(baseUrl, { connections: 8 });
  return { run: httpImports(stack.accounts, pool, 'listings', bodies), close: () => pool.close() };
}

/**
 * Runs `load` after a tenth of it as a warm-up, and prints the CPU each group of processes (and
 * this process, as `self`) spent per operation: ms for imports, µs for requests without rows.
 * `parts` are threads of a group's processes (the API's event loop): printed, not added again.
 */
async function measureCpu(
  title: string,
  load: LoadOptions,
  groups: Record<string, () => CpuSource[]>,
  self = 'load generator',
  parts: Record<string, () => CpuSource[]> = {},
): Promise<number> {
  await runLoad({ ...load, operations: Math.ceil(load.operations / 10) }); // warm-up
  let measured: LoadResult | undefined;
  const used = await cpuSplit({ ...groups, ...parts, [self]: () => [process.pid] }, async () => {
    measured = await runLoad(load);
  });
  const inMicroseconds = load.rowsPerOperation === 0;
  console.log(`\n${title}: ${measured!.requestsPerSec} req/s, errors ${measured!.errors}; CPU per ${inMicroseconds ? 'request' : 'import'}:`);
  for (const [name, ms] of Object.entries(used)) {
    console.log(`${name.padEnd(16)} ${inMicroseconds ? `${round((ms * 1000) / load.operations)} µs` : `${round(ms / load.operations)} ms`}`);
  }
  // note: the service's processes, PostgreSQL and Redis, not the load generator: what an operator
  // pays for. Per 1,000 rows, so that a lever moving work from one process to another shows as
  // what it is.
  const service = Object.entries(used).reduce((sum, [name, ms]) => (name === self || name in parts ? sum : sum + ms), 0);
  const rows = load.operations * load.rowsPerOperation;
  if (rows > 0) console.log(`${'all but the load'.padEnd(16)} ${round(service / load.operations)} ms an import, ${round((service * 1000) / rows)} ms per 1,000 rows`);
  return rows > 0 ? (service * 1000) / rows : 0;
}

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
      kind: 'listings', rowCount: batch.length, rows: encodeImportRows(batch), importId: randomUUID(),
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
  const ours = importsTo(stack.api.baseUrl, bodies);
  const perThousandRows: Record<string, number> = {};
  perThousandRows.ours = await measureCpu(`c=8, ${imports} imports of 200 listings`, { concurrency: 8, operations: imports, rowsPerOperation: 200, run: ours.run }, {
    api: () => [stack.api.child.pid!],
    worker: () => stack.workers.map((w) => w.child.pid!),
    redis: () => pidsNamed('redis-server'),
    postgres: () => pidsNamed('postgres'),
  }, 'load generator', {
    // note: the thread that answers every partner; the preparing threads run on other cores.
    'api event loop': () => [eventLoopOf(stack.api.child.pid!)],
  });
  await ours.close();

  // The floor the same way.
  const sql = createSql({ ...config, databasePoolMax: 8 });
  await measureCpu(`floor c=8, ${imports} direct writes`, { concurrency: 8, operations: imports, rowsPerOperation: 200, run: directWrites(sql) }, {
    postgres: () => pidsNamed('postgres'),
  }, 'floor client');
  await sql.end({ timeout: 5 });

  // The reference of issue 24's ratios, the direct-insert service (`npm run bench -- --only=direct`),
  // the same way: where its CPU goes tells whether the gap is in our processes or in PostgreSQL.
  // Then the same service with a record of each import in the rows' transaction, what answering a
  // retry exactly once costs it: the rest of our gap is the queue's.
  for (const recordImports of [false, true]) {
    const reference = await startDirectInsertServer(stack.env, { recordImports });
    try {
      const theirs = importsTo(reference.baseUrl, bodies);
      const title = recordImports ? 'direct-insert service with import records' : 'direct-insert service';
      perThousandRows[title] = await measureCpu(`${title} c=8, ${imports} imports`, { concurrency: 8, operations: imports, rowsPerOperation: 200, run: theirs.run }, {
        'direct service': () => [reference.child.pid!],
        postgres: () => pidsNamed('postgres'),
      });
      await theirs.close();
    } finally {
      await reference.stop();
    }
  }

  console.log('\nCPU per 1,000 rows at c=8, every process but the load generator (ours ÷ each reference):');
  for (const [title, ms] of Object.entries(perThousandRows)) {
    console.log(`${title.padEnd(44)} ${round(ms)} ms  (${round((perThousandRows.ours ?? 0) / ms)}x)`);
  }

  // GET /v1/api/me at c=32 beside the bare route (the third ratio), the same way: CPU per request.
  const bare = await stack.startBareServer();
  const requests = 15_000;
  const me = loadableGetTarget({ name: 'me', baseUrl: stack.api.baseUrl, accounts: stack.accounts, path: () => '/v1/api/me', withKey: true, expected: 200 });
  await measureCpu(`GET /v1/api/me c=32, ${requests} requests`, { concurrency: 32, operations: requests, rowsPerOperation: 0, run: me.run }, {
    api: () => [stack.api.child.pid!],
    redis: () => pidsNamed('redis-server'),
    postgres: () => pidsNamed('postgres'),
  }, 'load generator', { 'api event loop': () => [eventLoopOf(stack.api.child.pid!)] });
  await me.pool.close();
  const bareRoute = loadableGetTarget({ name: 'bare', baseUrl: bare.baseUrl, accounts: stack.accounts, path: () => '/bare', withKey: false, expected: 200 });
  await measureCpu(`bare Fastify route c=32, ${requests} requests`, { concurrency: 32, operations: requests, rowsPerOperation: 0, run: bareRoute.run }, {
    'bare route': () => [bare.child.pid!],
  });
  await bareRoute.pool.close();
} finally {
  await stack.close();
}
