import { Pool } from 'undici';
import { runLoad } from './lib/load.js';
import { listingRows } from './lib/rows.js';
import { peakRssMb, startStack } from './lib/stack.js';
import { readFileSync } from 'node:fs';

/** `tsx bench/leak-check.ts`: small imports in rounds, printing the API's current and peak RSS after each. */
const rss = (pid: number | undefined) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : null;
};
const stack = await startStack({ workers: 1, accounts: 100, keysPerAccount: 1 });
try {
  const pool = new Pool(stack.api.baseUrl, { connections: 32 });
  const bodies = Array.from({ length: 8 }, (_, s) => JSON.stringify({ listings: listingRows(10, s) }));
  for (let round = 0; round < 6; round += 1) {
    await runLoad({
      concurrency: 32,
      operations: 4_000,
      rowsPerOperation: 10,
      run: async (i) => {
        const account = stack.accounts[i % stack.accounts.length]!;
        const res = await pool.request({ path: '/v1/api/listings/bulk', method: 'POST', headers: { authorization: `Bearer ${account.keys[0]}`, 'content-type': 'application/json' }, body: bodies[i % 8] });
        await res.body.dump();
        return res.statusCode;
      },
    });
    console.log(`round ${round}: api rss ${rss(stack.api.child.pid)} MB (peak ${peakRssMb(stack.api.child.pid)}), worker rss ${rss(stack.workers[0]?.child.pid)} MB`);
  }
  await pool.close();
} finally {
  await stack.close();
}
