import type postgres from 'postgres';
import { Pool } from 'undici';
import { fillCatalogueListings } from './catalogue-fill.js';
import { compareInRounds, type ComparedRatio } from './compare-in-rounds.js';
import { httpImports } from './http-imports.js';
import { runLoad } from './load.js';
import { listingRows } from './rows.js';
import type { BenchAccount } from './stack.js';
import { percentile, round, type LoadResult } from './stats.js';

/** Entries of one archive request: the most one may send. */
const ENTRIES = 1_000;

export interface ArchiveComparison {
  /** each side's median round by p50, by name */
  sides: Map<string, LoadResult>;
  ratios: Record<string, ComparedRatio>;
  /** p50 and p99 of every latency of every round, per side */
  pooled: Record<string, { p50Ms: number; p99Ms: number; requests: number }>;
  /** rows the archive requests archived, and how many requests they were */
  archived: number;
  archiveRequests: number;
}

/**
 * `POST /v1/api/listings/bulk-archive` with 1,000 `external_ids` beside `POST
 * /v1/api/listings/bulk` with 200 new listings, alternated in `rounds` (compareInRounds) at
 * `concurrency`. Every archive request names 1,000 active rows no other request named, so each
 * really archives 1,000: the archive accounts are filled first with as many rows as the warm-up
 * and the rounds will name (`ARC-<n>`), batch `b` of an account being `ARC-<1000b>` to
 * `ARC-<1000b + 999>`; requests take the accounts in turn. Throws when a request archived other
 * than 1,000.
 */
export async function compareArchives(input: {
  sql: postgres.Sql;
  baseUrl: string;
  archiveAccounts: readonly BenchAccount[];
  importAccounts: readonly BenchAccount[];
  concurrency: number;
  operations: number;
  rounds: number;
}): Promise<ArchiveComparison> {
  const { sql, baseUrl, archiveAccounts, concurrency } = input;
  const warmUp = Math.max(8, concurrency);
  const requests = warmUp + input.rounds * input.operations;
  const batchesPerAccount = Math.ceil(requests / archiveAccounts.length);
  await fillCatalogueListings(sql, archiveAccounts.map((account) => account.id), batchesPerAccount * ENTRIES, 'ARC-');
  await sql`vacuum analyze listings`;
  await sql`checkpoint`;

  // note: built before the clock runs; the n-th request sends body n
  const bodies = Array.from({ length: requests }, (_, n) => {
    const batch = Math.floor(n / archiveAccounts.length);
    return JSON.stringify({ external_ids: Array.from({ length: ENTRIES }, (_, i) => `ARC-${batch * ENTRIES + i}`) });
  });
  const archivePool = new Pool(baseUrl, { connections: concurrency });
  const importPool = new Pool(baseUrl, { connections: concurrency });
  let sent = 0;
  let archived = 0;
  const wrong: string[] = [];
  const archive = async () => {
    const n = sent;
    sent += 1;
    if (n >= requests) throw new Error('bench: no fresh rows left to archive');
    const account = archiveAccounts[n % archiveAccounts.length]!;
    const { statusCode, body } = await archivePool.request({
      path: '/v1/api/listings/bulk-archive',
      method: 'POST',
      headers: { authorization: `Bearer ${account.keys[n % account.keys.length]}`, 'content-type': 'application/json' },
      body: bodies[n],
    });
    const answer = await body.text();
    const count = statusCode === 200 ? (JSON.parse(answer) as { archived?: number }).archived : undefined;
    if (count === ENTRIES) archived += count;
    else wrong.push(`${statusCode} ${answer.slice(0, 200)}`);
    return statusCode;
  };
  const importBodies = Array.from({ length: 8 }, (_, s) => JSON.stringify({ listings: listingRows(200, 700 + s) }));
  const bulk = httpImports(input.importAccounts, importPool, 'listings', importBodies);
  const archiveName = `catalogue: archive 1,000 by external_id c=${concurrency}`;
  const importName = `catalogue: import 200 listings c=${concurrency}`;
  const latencies: Record<string, number[]> = { [archiveName]: [], [importName]: [] };
  // note: compareInRounds' first load of each side is its warm-up; the latencies pooled are the rounds'
  const side = (name: string, run: (index: number) => Promise<number>, rows: number) => {
    let loads = 0;
    return {
      name,
      load: (operations: number) => {
        loads += 1;
        return runLoad({ concurrency, operations, rowsPerOperation: rows, run, ...(loads > 1 ? { collect: latencies[name]! } : {}) });
      },
    };
  };
  try {
    const archiveSide = side(archiveName, archive, ENTRIES);
    const importSide = side(importName, bulk, 200);
    const { sides, ratios } = await compareInRounds(
      [
        {
          ratio: `c=${concurrency} p50 archive 1,000 to import 200`,
          field: 'p50Ms',
          target: 'none set: reported beside an import',
          operations: input.operations,
          warmUpOperations: warmUp,
          ours: archiveSide,
          reference: importSide,
        },
      ],
      input.rounds,
    );
    if (wrong.length > 0) throw new Error(`bench: ${wrong.length} archive requests did not archive ${ENTRIES} rows, e.g. ${wrong[0]}`);
    const pooled: ArchiveComparison['pooled'] = {};
    for (const [name, values] of Object.entries(latencies)) {
      const sorted = [...values].sort((a, b) => a - b);
      pooled[name] = { p50Ms: round(percentile(sorted, 50)), p99Ms: round(percentile(sorted, 99)), requests: sorted.length };
    }
    return { sides, ratios, pooled, archived, archiveRequests: sent };
  } finally {
    await archivePool.close();
    await importPool.close();
  }
}
