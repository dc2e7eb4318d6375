import { Pool } from 'undici';
import type { BenchAccount } from './stack.js';
import type { LoadResult } from './stats.js';

/** A GET measured at c=32: where, with the keys of which accounts (or none), expecting which status. */
export interface GetTarget {
  name: string;
  baseUrl: string;
  accounts: readonly BenchAccount[];
  /** the path asked, by the index of the account asking */
  path: (account: number) => string;
  withKey: boolean;
  expected: number;
}

/**
 * `target` with a pool of 32 connections, one request as `run(index)` (the accounts in turn, each
 * with its keys in turn, one per hundred requests) and its measured rounds.
 */
export function loadableGetTarget<Target extends GetTarget>(target: Target) {
  const pool = new Pool(target.baseUrl, { connections: 32 });
  const run = async (index: number) => {
    const accountIndex = index % target.accounts.length;
    const account = target.accounts[accountIndex]!;
    const headers = target.withKey ? { authorization: `Bearer ${account.keys[Math.floor(index / 100) % account.keys.length]}` } : {};
    const { statusCode, body } = await pool.request({ path: target.path(accountIndex), method: 'GET', headers });
    await body.dump();
    return statusCode;
  };
  return { ...target, pool, run, ok: (status: number) => status === target.expected, rounds: [] as LoadResult[] };
}
