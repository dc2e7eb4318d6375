import { Pool } from 'undici';
import { copyListings } from './copy-insert.js';
import { cpuMs, eventLoopOf, machineBusyMs } from './cpu.js';
import { uploadListingsFile, waitForImport } from './file-import.js';
import { copyListingBatches } from './file-rows.js';
import { runLoad } from './load.js';
import { listingRows } from './rows.js';
import type { BenchStack } from './stack.js';
import { summarise, type LoadResult } from './stats.js';

/** One round of the `files` section: what was measured, in ms and loads. */
export interface FileRound {
  uploadMs: number;
  /** CPU the API's event loop used while the file was uploaded, and the whole API process (its preparing threads too) */
  uploadLoopCpuMs: number;
  uploadApiCpuMs: number;
  writeMs: number;
  copyMs: number;
  /**
   * CPU the whole machine spent on the upload, on the writing (the bulk imports measured beside
   * it included) and on the COPY: every core, every process
   */
  uploadMachineCpuMs: number;
  writeMachineCpuMs: number;
  copyMachineCpuMs: number;
  /** the same for the idle bulk imports, before and after the file together */
  idleMachineCpuMs: number;
  /** bulk imports of 200 listings, c=1, just before and just after the file */
  idle: LoadResult;
  /** the same, from the file's first written chunk to its completion */
  busy: LoadResult;
  /** bulk imports answered 201 while the file was written */
  busyImports: number;
}

/** Empties the tables and writes everything out, so that no phase pays for another's rows. */
async function emptyTables(stack: BenchStack): Promise<void> {
  await stack.sql`truncate listings, machines, imports cascade`;
  await stack.sql`checkpoint`;
}

/**
 * One round: bulk imports of 200 listings at c=1 idle, a file of `rows` listings uploaded and
 * written (bulk imports measured from its first chunk to its completion), bulk imports idle
 * again, then a plain COPY of the same rows into the emptied table. The file and the COPY go to
 * account 0; bulk imports rotate over the others, so that no per-minute quota interferes.
 */
export async function fileRound(stack: BenchStack, rows: number, idleOperations: number): Promise<FileRound> {
  const fileAccount = stack.accounts[0]!;
  const key = fileAccount.keys[0]!;
  const bulkAccounts = stack.accounts.slice(1);
  const bodies = Array.from({ length: 8 }, (_, s) => JSON.stringify({ listings: listingRows(200, s) }));
  const bulkPool = new Pool(stack.api.baseUrl, { connections: 1 });
  const pollPool = new Pool(stack.api.baseUrl, { connections: 1 });
  const bulk = async (index: number) => {
    const account = bulkAccounts[index % bulkAccounts.length]!;
    const { statusCode, body } = await bulkPool.request({
      path: '/v1/api/listings/bulk',
      method: 'POST',
      headers: { authorization: `Bearer ${account.keys[0]}`, 'content-type': 'application/json' },
      body: bodies[index % bodies.length],
    });
    await body.dump();
    return statusCode;
  };
  const idleLoad = (collect: number[]) => runLoad({ concurrency: 1, operations: idleOperations, rowsPerOperation: 200, run: bulk, collect });
  try {
    await emptyTables(stack);
    const idleLatencies: number[] = [];
    let idleMachineCpuMs = machineBusyMs();
    const before = await idleLoad(idleLatencies);
    idleMachineCpuMs = machineBusyMs() - idleMachineCpuMs;

    const apiPid = stack.api.child.pid!;
    const loopBefore = cpuMs(eventLoopOf(apiPid));
    const apiBefore = cpuMs(apiPid);
    const machineBefore = machineBusyMs();
    const upload = await uploadListingsFile(stack.api.baseUrl, key, rows);
    const uploadLoopCpuMs = cpuMs(eventLoopOf(apiPid)) - loopBefore;
    const uploadApiCpuMs = cpuMs(apiPid) - apiBefore;
    const accepted = performance.now();
    const machineAccepted = machineBusyMs();
    const completed = waitForImport(pollPool, key, upload.import.id, ['completed']);
    let done = false;
    void completed.finally(() => (done = true)).catch(() => {});
    // note: from the first written chunk on: before it, the file is only waiting for a worker's poll
    await waitForImport(pollPool, key, upload.import.id, ['running']);
    const busy = await runLoad({ concurrency: 1, operations: Infinity, until: () => done, rowsPerOperation: 200, run: bulk });
    const end = await completed;
    const writeMachineCpuMs = machineBusyMs() - machineAccepted;
    if (end.import.state !== 'completed' || end.import.rows.processed !== rows) {
      throw new Error(`bench: the file import ended ${end.import.state} with ${JSON.stringify(end.import.rows)}`);
    }

    const idleAgain = machineBusyMs();
    const after = await idleLoad(idleLatencies);
    idleMachineCpuMs += machineBusyMs() - idleAgain;
    // note: idle before and after the file, pooled: a table grown by the file (or a drift of the
    // machine's speed) tilts neither side of the ratio.
    const statuses = { ...before.statuses };
    for (const [status, count] of Object.entries(after.statuses)) statuses[status] = (statuses[status] ?? 0) + count;
    const idle = summarise(idleLatencies, before.elapsedMs + after.elapsedMs, 200, before.errors + after.errors, statuses);

    await emptyTables(stack);
    const copyStarted = performance.now();
    const machineCopyStarted = machineBusyMs();
    await copyListings(stack.sql, fileAccount.id, rows, copyListingBatches(rows));
    const copyMs = performance.now() - copyStarted;
    const copyMachineCpuMs = machineBusyMs() - machineCopyStarted;
    await emptyTables(stack);

    return {
      uploadMs: upload.ms,
      uploadLoopCpuMs,
      uploadApiCpuMs,
      writeMs: end.at - accepted,
      copyMs,
      uploadMachineCpuMs: machineAccepted - machineBefore,
      writeMachineCpuMs,
      copyMachineCpuMs,
      idleMachineCpuMs,
      idle,
      busy,
      busyImports: busy.requests - busy.errors,
    };
  } finally {
    await bulkPool.close();
    await pollPool.close();
  }
}
