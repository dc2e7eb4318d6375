import { loadableGetTarget } from './get-target.js';
import { runLoad } from './load.js';
import type { BenchAccount } from './stack.js';
import { ratio, type LoadResult } from './stats.js';

/** A page target of the `catalogue` section: its name and measured rounds. */
export interface MeasuredTarget {
  name: string;
  rounds: LoadResult[];
}

export interface PageComparison {
  /** `/me`, the first page and the cursor page, in that order */
  targets: MeasuredTarget[];
  /** each page's req/s ÷ /me's, the median of the rounds' ratios */
  ratios: Record<string, { ratio: number; rounds: number[] }>;
}

const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/**
 * Pages of 100 listings read back at c=32 beside `GET /v1/api/me`: the first page
 * (`?limit=100`), and a page from a cursor in the middle of each catalogue
 * (`?limit=100&starting_after=<cursors[account]>`), each with accounts of its own (the per-minute
 * quota counts reads). The three alternate in `rounds`, in turn forwards and backwards, so that a
 * swing of the machine's speed lands on all and none always follows the same load.
 */
export async function comparePages(input: {
  baseUrl: string;
  groups: { me: readonly BenchAccount[]; first: readonly BenchAccount[]; cursor: readonly BenchAccount[] };
  cursors: readonly string[];
  rounds: number;
  meOperations: number;
  pageOperations: number;
}): Promise<PageComparison> {
  const { baseUrl, groups, cursors } = input;
  const targets = [
    { name: 'catalogue: GET /v1/api/me c=32', baseUrl, accounts: groups.me, path: () => '/v1/api/me', withKey: true, expected: 200 },
    { name: 'catalogue: first page of 100 listings c=32', baseUrl, accounts: groups.first, path: () => '/v1/api/listings?limit=100', withKey: true, expected: 200 },
    {
      name: 'catalogue: page of 100 after a cursor c=32',
      baseUrl,
      accounts: groups.cursor,
      path: (account: number) => `/v1/api/listings?limit=100&starting_after=${cursors[account]}`,
      withKey: true,
      expected: 200,
    },
  ].map(loadableGetTarget);
  try {
    // note: a page that is not 100 rows (or the last one) would measure something else
    for (const target of targets.slice(1)) {
      const { statusCode, body } = await target.pool.request({ path: target.path(0), method: 'GET', headers: { authorization: `Bearer ${target.accounts[0]!.keys[0]}` } });
      const page = (await body.json()) as { data?: unknown[]; has_more?: boolean };
      if (statusCode !== 200 || page.data?.length !== 100 || page.has_more !== true) {
        throw new Error(`bench: ${target.name} answered ${statusCode} with ${page.data?.length} rows, has_more ${page.has_more}`);
      }
    }
    const operations = (i: number) => (i === 0 ? input.meOperations : input.pageOperations);
    for (const target of targets) await runLoad({ concurrency: 32, operations: 2_000, rowsPerOperation: 0, run: target.run, ok: target.ok }); // warm-up
    for (let round = 0; round < input.rounds; round += 1) {
      const order = round % 2 === 0 ? [0, 1, 2] : [2, 1, 0];
      for (const i of order) {
        const target = targets[i]!;
        target.rounds.push(await runLoad({ concurrency: 32, operations: operations(i), rowsPerOperation: i === 0 ? 0 : 100, run: target.run, ok: target.ok }));
      }
    }
    const perRound = (i: number) => targets[i]!.rounds.map((page, n) => ratio(page.requestsPerSec, targets[0]!.rounds[n]!.requestsPerSec));
    const first = perRound(1);
    const cursor = perRound(2);
    return {
      targets: targets.map(({ name, rounds }) => ({ name, rounds })),
      ratios: {
        'first page to /me, req/s': { ratio: median(first), rounds: first },
        'cursor page to /me, req/s': { ratio: median(cursor), rounds: cursor },
      },
    };
  } finally {
    await Promise.all(targets.map((target) => target.pool.close()));
  }
}
