import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { startApi, startWorkerProcess } from '../test/support/processes.js';
import { runLoad } from './lib/load.js';
import { summariseProfile } from './lib/profile-summary.js';
import { listingRows } from './lib/rows.js';
import { startStack } from './lib/stack.js';

/**
 * `npm run bench:profile -- auth|import [concurrency]`: drives GET /v1/api/me at concurrency 32,
 * or 200-row listings imports at concurrency 1 (or the concurrency given), against an API and a
 * worker started with --cpu-prof. The
 * profiles land in bench/results/profiles/ (open them in Chrome DevTools); a summary of self
 * time by package and by function is printed.
 */
const mode = process.argv[2] === 'import' ? 'import' : 'auth';
const dir = fileURLToPath(new URL('./results/profiles/', import.meta.url));
const profile = ['--cpu-prof', `--cpu-prof-dir=${dir}`];
const stack = await startStack({ workers: 0, accounts: 100, keysPerAccount: 10 }); // builds dist/
try {
  const api = await startApi(stack.env, { nodeArgs: profile, runtime: 'compiled' });
  const worker = await startWorkerProcess({ ...stack.env, LOG_LEVEL: 'info' }, { nodeArgs: profile, runtime: 'compiled' });
  const bodies = Array.from({ length: 4 }, (_, s) => JSON.stringify({ listings: listingRows(200, s) }));
  const concurrency = Number(process.argv[3] ?? (mode === 'auth' ? 32 : 1));
  const pool = new Pool(api.baseUrl, { connections: concurrency });
  const run = async (index: number) => {
    const account = stack.accounts[index % stack.accounts.length]!;
    const authorization = `Bearer ${account.keys[Math.floor(index / 100) % account.keys.length]}`;
    const { statusCode, body } =
      mode === 'auth'
        ? await pool.request({ path: '/v1/api/me', method: 'GET', headers: { authorization } })
        : await pool.request({
            path: '/v1/api/listings/bulk',
            method: 'POST',
            headers: { authorization, 'content-type': 'application/json' },
            body: bodies[index % bodies.length],
          });
    await body.dump();
    return statusCode;
  };
  console.log(await runLoad({ concurrency, operations: mode === 'auth' ? 30_000 : 400, rowsPerOperation: 0, run }));
  await pool.close();
  await Promise.all([api.stop('SIGTERM'), worker.stop('SIGTERM')]);
  console.log(`profiles in ${dir}`);
  for (const [part, pid] of [['api', api.child.pid], ['worker', worker.child.pid]] as const) {
    const file = readdirSync(dir).find((name) => name.includes(`.${pid}.`) && name.endsWith('.cpuprofile'));
    if (file) console.log(`\n--- ${part} (self time) ---\n${summariseProfile(join(dir, file))}`);
  }
} finally {
  await stack.close();
}
