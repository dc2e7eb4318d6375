import { Pool } from 'undici';
import { fillMirrorListings } from './catalogue-fill.js';
import { readImport } from './file-import.js';
import { runLoad } from './load.js';
import { mirrorBytes, uploadMirrorFile, type MirrorView } from './mirror-file.js';
import { listingRows } from './rows.js';
import type { BenchAccount, BenchStack } from './stack.js';
import { summarise, type LoadResult } from './stats.js';

/** What the `catalogue` section's mirror measured, in ms and loads. */
export interface MirrorRound {
  bytes: number;
  /** request start to the 202 */
  uploadMs: number;
  /** the 202 to the first poll that saw every chunk written (`rows.processed` equal to `received`) */
  chunksMs: number;
  /** the 202 to the first poll that saw the import `completed` */
  writeMs: number;
  /**
   * the completing transaction, as the database recorded it: from its start (`now()`, the
   * `archived_at` it gave the rows) to the import's `finished_at` (`clock_timestamp()` once the
   * removal is recorded): the count, the guard and the update of the rows left out
   */
  removalMs: number;
  /** the poll that saw every chunk written to the one that saw `completed` (50 ms apart) */
  removalSeenMs: number;
  /** the import as it ended */
  end: MirrorView;
  /** bulk imports of 200 listings, c=1, just before and just after the mirror */
  idle: LoadResult;
  /** the same, from the mirror's first written chunk to its completion */
  busy: LoadResult;
  /** the busy imports that ran at some moment of the completing transaction */
  duringRemoval: LoadResult;
}

/**
 * The mirror: `mirrorAccount` is given `rows + missing` listings a day old (`M-0` ...), then a
 * mirror file of the first `rows` of them is uploaded with `max_removal=10`, so that the last
 * `missing` are archived when the file is written. Bulk imports of 200 listings at c=1 (by
 * `bulkAccounts`, in turn) run idle before and after it and while it is written and its rows
 * removed. Throws unless the removal archived exactly the `missing` rows.
 */
export async function mirrorRound(input: {
  stack: BenchStack;
  mirrorAccount: BenchAccount;
  bulkAccounts: readonly BenchAccount[];
  rows: number;
  missing: number;
  idleOperations: number;
}): Promise<MirrorRound> {
  const { stack, mirrorAccount, bulkAccounts, rows, missing } = input;
  const key = mirrorAccount.keys[0]!;
  await fillMirrorListings(stack.sql, mirrorAccount.id, rows + missing);
  await stack.sql`vacuum analyze listings`;
  await stack.sql`checkpoint`;

  const bodies = Array.from({ length: 8 }, (_, s) => JSON.stringify({ listings: listingRows(200, 800 + s) }));
  const bulkPool = new Pool(stack.api.baseUrl, { connections: 1 });
  const pollPool = new Pool(stack.api.baseUrl, { connections: 1 });
  // every bulk import's start and end (epoch ms), to find those that ran during the removal
  const spans: { from: number; to: number; status: number }[] = [];
  const bulk = async (index: number) => {
    const account = bulkAccounts[index % bulkAccounts.length]!;
    const from = Date.now();
    const { statusCode, body } = await bulkPool.request({
      path: '/v1/api/listings/bulk',
      method: 'POST',
      headers: { authorization: `Bearer ${account.keys[0]}`, 'content-type': 'application/json' },
      body: bodies[index % bodies.length],
    });
    await body.dump();
    spans.push({ from, to: Date.now(), status: statusCode });
    return statusCode;
  };
  const idleLoad = (collect: number[]) => runLoad({ concurrency: 1, operations: input.idleOperations, rowsPerOperation: 200, run: bulk, collect });
  try {
    const idleLatencies: number[] = [];
    const before = await idleLoad(idleLatencies);

    const upload = await uploadMirrorFile(stack.api.baseUrl, key, rows, 10);
    const accepted = performance.now();
    let seenRunning = () => {};
    const running = new Promise<void>((resolve) => (seenRunning = resolve));
    let done = false;
    // note: polled every 50 ms, so that the removal (between the last chunk and `completed`) is
    // seen to within a tenth of a second; the database's own times measure it exactly (below).
    const watch = (async () => {
      let chunksAt: number | undefined;
      for (;;) {
        const seen = (await readImport(pollPool, key, upload.import.id)) as unknown as MirrorView;
        const at = performance.now();
        if (seen.state !== 'queued') seenRunning();
        if (chunksAt === undefined && seen.rows.processed >= seen.rows.received) chunksAt = at;
        if (seen.state !== 'queued' && seen.state !== 'running') return { end: seen, at, chunksAt: chunksAt ?? at };
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    void watch.finally(() => {
      done = true;
      seenRunning();
    }).catch(() => {});
    // note: from the first written chunk on: before it, the file is only waiting for a worker's poll
    await running;
    const busySpansFrom = spans.length;
    const busy = await runLoad({ concurrency: 1, operations: Infinity, until: () => done, rowsPerOperation: 200, run: bulk });
    const busySpans = spans.slice(busySpansFrom);
    const { end, at, chunksAt } = await watch;

    const [outcome] = await stack.sql<{ archived: number; leftOut: number; removalFrom: number | null; finishedAt: number | null }[]>`
      select count(*) filter (where l.archived_at is not null)::int as archived,
             count(*) filter (where l.archived_at is not null and substr(l.external_id, 3)::int >= ${rows})::int as "leftOut",
             (extract(epoch from min(l.archived_at)) * 1000)::float8 as "removalFrom",
             (select (extract(epoch from i.finished_at) * 1000)::float8 from imports as i where i.job_id = ${upload.import.id}) as "finishedAt"
      from listings as l where l.account_id = ${mirrorAccount.id}`;
    const { archived, leftOut, removalFrom, finishedAt } = outcome!;
    if (
      end.state !== 'completed' ||
      end.rows.processed !== rows ||
      end.removal?.state !== 'done' ||
      end.removal.rows !== missing ||
      end.rows.archived !== missing ||
      archived !== missing ||
      leftOut !== missing ||
      removalFrom === null ||
      finishedAt === null
    ) {
      throw new Error(
        `bench: the mirror ended ${end.state}, rows ${JSON.stringify(end.rows)}, removal ${JSON.stringify(end.removal)}; ` +
          `${archived} rows archived, ${leftOut} of them left out of the file (expected ${missing})`,
      );
    }
    const during = busySpans.filter((span) => span.to >= removalFrom && span.from <= finishedAt);
    const duringRemoval = summarise(
      during.map((span) => span.to - span.from),
      finishedAt - removalFrom,
      200,
      during.filter((span) => span.status < 200 || span.status >= 300).length,
      {},
    );

    const after = await idleLoad(idleLatencies);
    // note: idle before and after the mirror, pooled, as in the whole-file round
    const statuses = { ...before.statuses };
    for (const [status, count] of Object.entries(after.statuses)) statuses[status] = (statuses[status] ?? 0) + count;
    const idle = summarise(idleLatencies, before.elapsedMs + after.elapsedMs, 200, before.errors + after.errors, statuses);

    return {
      bytes: mirrorBytes(rows),
      uploadMs: upload.ms,
      chunksMs: chunksAt - accepted,
      writeMs: at - accepted,
      removalMs: finishedAt - removalFrom,
      removalSeenMs: at - chunksAt,
      end,
      idle,
      busy,
      duringRemoval,
    };
  } finally {
    await bulkPool.close();
    await pollPool.close();
  }
}
