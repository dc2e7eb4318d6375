import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { apiErrors } from '../../shared/errors/api-errors.js';
import { prepareImport, type PrepareRequest, type PrepareOutcome } from './prepare-import.js';
import { ownsItsMemory, type PrepareTask } from './prepare-thread.js';

/**
 * Bodies from this size are prepared on threads below the event loop's priority. note: measured
 * (bench, fairness): a 2 MB body costs some 50 ms of CPU, and a burst of them on threads at the
 * event loop's priority delayed every other request by seconds on a machine whose cores were all
 * busy. Smaller bodies (an import of the usual size, 200 listings, is 185 KB) go to threads at
 * the event loop's priority: at nice 10 on such a machine they halved the import throughput.
 */
export const LARGE_FROM_BYTES = 512 * 1024;

/**
 * IMPORT_PREPARE_THREADS when unset: one per core but one (the event loop's), at least one, at
 * most 4, in each of the two pools (bodies of the usual size, large bodies). note: each thread is
 * a V8 heap of its own, some 25 MB of the process's memory (65 MB when run from TypeScript
 * through tsx); on two cores one thread a pool kept the burst's bystanders under a second.
 */
export function defaultPrepareThreads(): number {
  return Math.max(1, Math.min(4, availableParallelism() - 1));
}

/**
 * Large bodies waiting for a thread, across the process, beyond which the next one is refused
 * (503 `Service overloaded, retry shortly`, docs/access.md#load-shedding). note: a waiting body
 * holds its bytes (up to 2 MB, outside the V8 heap), so this bounds them to some 64 MB; a 2 MB
 * body takes a thread some 50 ms, so the last of 32 waits under two seconds on one thread.
 */
export const DEFAULT_MAX_QUEUE = 32;

/**
 * Bodies of the usual size waiting for a thread beyond which the next is refused. note: each is
 * under LARGE_FROM_BYTES, so they hold at most 64 MB; one takes a thread about 5 ms (200
 * listings), so the last of 128 waits well under a second on one thread.
 */
export const DEFAULT_MAX_QUEUE_SMALL = 128;

export interface ImportPreparerOptions {
  /** large bodies waiting for a thread beyond which the next is refused; DEFAULT_MAX_QUEUE when unset */
  maxQueue?: number;
}

/** piscina's refusal when its queue is full (it has no error code or class to tell it by). */
const QUEUE_AT_LIMIT = 'Task queue is at limit';

/**
 * Parses, validates and encodes bulk bodies (prepareImport) on pools of worker threads (piscina),
 * so that the event loop, which answers every partner, the health checks and the in-flight
 * slots' renewals, only reads bodies in and hands the encoded rows to Redis: the rows come back
 * as bytes whose memory is moved, not copied (prepare-thread.ts). A burst of one partner's 2 MB
 * imports goes to a pool of its own, below the event loop's priority (LARGE_FROM_BYTES), so that
 * it does not hold anyone else's imports either (see bench/README.md, fairness and issue 43).
 *
 * `threads: 0` prepares everything inline. Each pool starts with its first body. A body that
 * finds its pool's queue full (DEFAULT_MAX_QUEUE large bodies, or `maxQueue`;
 * DEFAULT_MAX_QUEUE_SMALL others) is refused with 503.
 *
 * A body of the usual size that its caller says arrived `alone` (no other import in flight in
 * the process) while no other body is being prepared is prepared inline: nothing else wants the
 * event loop then, and the hop to a thread and back is time the partner waits through (bench:phases
 * at c=1, bench/README.md, issue 43). Under load others are in flight, and every body goes to a
 * thread.
 */
export class ImportPreparer {
  private readonly pools: { small?: Piscina; large?: Piscina } = {};
  /** bodies being prepared on threads now */
  private onThreads = 0;

  constructor(
    private readonly threads: number,
    private readonly options: ImportPreparerOptions = {},
  ) {}

  async prepare(request: PrepareRequest, bytes: Buffer, { alone = false }: { alone?: boolean } = {}): Promise<PrepareOutcome> {
    const large = bytes.length >= LARGE_FROM_BYTES;
    if (this.threads === 0 || (alone && !large && this.onThreads === 0)) return prepareImport(request, bytes);
    const task: PrepareTask = { ...request, bytes, lowPriority: large };
    this.onThreads += 1;
    // note: the body is moved to the thread rather than copied when it owns its memory (a body
    // read in one piece from a socket may be a slice of a larger allocation, and is then copied).
    try {
      return (await this.poolFor(large).run(task, ownsItsMemory(bytes) ? { transferList: [bytes.buffer as ArrayBuffer] } : {})) as PrepareOutcome;
    } catch (error) {
      if (error instanceof Error && error.message === QUEUE_AT_LIMIT) throw apiErrors.overloaded();
      throw error;
    } finally {
      this.onThreads -= 1;
    }
  }

  async close(): Promise<void> {
    const pools = [this.pools.small, this.pools.large].filter((pool) => pool !== undefined);
    this.pools.small = this.pools.large = undefined;
    await Promise.all(pools.map((pool) => pool.destroy()));
  }

  private poolFor(large: boolean): Piscina {
    const name = large ? 'large' : 'small';
    this.pools[name] ??= this.startPool(large ? (this.options.maxQueue ?? DEFAULT_MAX_QUEUE) : DEFAULT_MAX_QUEUE_SMALL);
    return this.pools[name];
  }

  private startPool(maxQueue: number): Piscina {
    const fromSource = import.meta.url.endsWith('.ts');
    return new Piscina({
      filename: new URL(`./prepare-thread.${fromSource ? 'ts' : 'js'}`, import.meta.url).href,
      minThreads: 1,
      maxThreads: this.threads,
      maxQueue,
      // note: run from TypeScript (npm start, the tests), each thread loads the task through tsx
      // as the main thread does; the built service runs plain JavaScript.
      ...(fromSource ? { execArgv: ['--import', 'tsx'] } : {}),
    });
  }
}
