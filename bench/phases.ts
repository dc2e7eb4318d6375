import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Pool } from 'undici';
import { IMPORT_QUEUE_NAME, type ImportJobData } from '../src/shared/import-queue.js';
import { listingRows } from './lib/rows.js';
import { startStack } from './lib/stack.js';
import { percentile, round } from './lib/stats.js';

/**
 * `npm run bench:phases`: where the time of one import goes, from the timestamps BullMQ keeps
 * on each job (added, picked up, finished) next to the client's latency, at concurrency 1.
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
} finally {
  await stack.close();
}
