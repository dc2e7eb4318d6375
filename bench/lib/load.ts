import { summarise, type LoadResult } from './stats.js';

export interface LoadOptions {
  concurrency: number;
  /** total operations, spread over the workers (Infinity with `until`) */
  operations: number;
  /** when given, no operation starts once it returns true */
  until?: () => boolean;
  rowsPerOperation: number;
  /** one operation; resolves with a status (an HTTP status, or 0 for a direct call) */
  run: (index: number) => Promise<number>;
  /** statuses that count as success */
  ok?: (status: number) => boolean;
  /** receives every latency (ms), e.g. to pool the tails of several rounds */
  collect?: number[];
}

/** Closed-loop load: `concurrency` callers, each starting its next operation when the last ends. */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const ok = options.ok ?? ((status: number) => status >= 200 && status < 300);
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let errors = 0;
  let next = 0;
  const started = performance.now();
  const caller = async () => {
    for (;;) {
      const index = next;
      next += 1;
      if (index >= options.operations || options.until?.()) return;
      const t0 = performance.now();
      let status: number;
      try {
        status = await options.run(index);
      } catch {
        status = -1;
      }
      const latency = performance.now() - t0;
      latencies.push(latency);
      options.collect?.push(latency);
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (!ok(status)) errors += 1;
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, caller));
  return summarise(latencies, performance.now() - started, options.rowsPerOperation, errors, statuses);
}
