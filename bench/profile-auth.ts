import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { startApi } from '../test/support/processes.js';
import { runLoad } from './lib/load.js';
import { startStack } from './lib/stack.js';

/**
 * `npm run bench:profile-auth`: GET /v1/api/me at concurrency 32 against an API process started
 * with --cpu-prof; the profile lands in bench/results/profiles/ (open it in Chrome DevTools).
 */
const stack = await startStack({ workers: 0, accounts: 100, keysPerAccount: 10 });
try {
  const dir = fileURLToPath(new URL('./results/profiles/', import.meta.url));
  const api = await startApi(stack.env, ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
  const pool = new Pool(api.baseUrl, { connections: 32 });
  const run = async (index: number) => {
    const account = stack.accounts[index % stack.accounts.length]!;
    const { statusCode, body } = await pool.request({
      path: '/v1/api/me',
      method: 'GET',
      headers: { authorization: `Bearer ${account.keys[Math.floor(index / 100) % account.keys.length]}` },
    });
    await body.dump();
    return statusCode;
  };
  console.log(await runLoad({ concurrency: 32, operations: 30_000, rowsPerOperation: 0, run }));
  await pool.close();
  console.log(api.child.spawnargs, 'api exit', await api.stop('SIGTERM'));
} finally {
  await stack.close();
}
