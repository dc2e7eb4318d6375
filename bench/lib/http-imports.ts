import type { Pool } from 'undici';
import type { BenchAccount } from './stack.js';

/**
 * One bulk import as `run(index)` of a load (bench/lib/load.ts): `bodies` in turn, sent through
 * `pool` by the accounts in turn, each with its keys in turn; resolves to the status.
 */
export function httpImports(accounts: readonly BenchAccount[], pool: Pool, kind: 'listings' | 'machines', bodies: readonly string[]) {
  return async (index: number) => {
    const account = accounts[index % accounts.length]!;
    const { statusCode, body } = await pool.request({
      path: `/v1/api/${kind}/bulk`,
      method: 'POST',
      headers: { authorization: `Bearer ${account.keys[index % account.keys.length]}`, 'content-type': 'application/json' },
      body: bodies[index % bodies.length],
    });
    await body.text();
    return statusCode;
  };
}
