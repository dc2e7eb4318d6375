import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { apiErrors } from '../../shared/errors/api-errors.js';
import { prepareImport, type PrepareRequest, type PrepareOutcome } from './prepare-import.js';
import type { PrepareTask } from './prepare-thread.js';

/**
 * Bodies smaller than this are prepared inline. note: measured (bench, imports and fairness):
 * an import of the usual size (200 listings, 185 KB) costs the event loop a few milliseconds,
 * and sending it to a low-priority thread halved the import throughput at c=8 on a machine whose
 * cores were all busy; a 2 MB body costs some 50 ms, and that is what stalled everyone else.
 */
export const INLINE_BELOW_BYTES = 512 * 1024;

/**
 * IMPORT_PREPARE_THREADS when unset: one per core but one (the event loop's), at least one, at
 * most 4. note: each thread is a V8 heap of its own, some 25 MB of the process's memory (65 MB
 * when run from TypeScript through tsx); on two cores one thread kept the burst's bystanders
 * under a second, as two did.
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

export interface ImportPreparerOptions {
  /** bodies waiting for a thread beyond which the next is refused; DEFAULT_MAX_QUEUE when unset */
  maxQueue?: number;
}

/** piscina's refusal when its queue is full (it has no error code or class to tell it by). */
const QUEUE_AT_LIMIT = 'Task queue is at limit';

/**
 * Parses, validates and encodes bulk bodies (prepareImport) on a pool of worker threads
 * (piscina), so that one partner's burst of 2 MB imports does not hold the event loop that
 * answers every other partner, the health checks and the in-flight slots' renewals. A 2 MB body
 * costs the event loop some 50 ms of parsing, validation, encoding and garbage collection when
 * done inline; handed to a thread, well under one (see bench/README.md, fairness).
 *
 * `threads: 0` prepares everything inline. The pool starts with the first large body. A body
 * that finds DEFAULT_MAX_QUEUE (or `maxQueue`) others waiting for a thread is refused with 503.
 */
export class ImportPreparer {
  private pool: Piscina | undefined;

  constructor(
    private readonly threads: number,
    private readonly options: ImportPreparerOptions = {},
  ) {}

  async prepare(request: PrepareRequest, bytes: Buffer): Promise<PrepareOutcome> {
    if (this.threads === 0 || bytes.length < INLINE_BELOW_BYTES) return prepareImport(request, bytes);
    const task: PrepareTask = { ...request, bytes };
    // note: the body is moved to the thread rather than copied when it owns its memory (a body
    // of this size always does; small Buffers share a pool and are never moved).
    const owns = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
    try {
      return (await this.poolStarted().run(task, owns ? { transferList: [bytes.buffer] } : {})) as PrepareOutcome;
    } catch (error) {
      if (error instanceof Error && error.message === QUEUE_AT_LIMIT) throw apiErrors.overloaded();
      throw error;
    }
  }

  async close(): Promise<void> {
    await this.pool?.destroy();
    this.pool = undefined;
  }

  private poolStarted(): Piscina {
    if (this.pool) return this.pool;
    const fromSource = import.meta.url.endsWith('.ts');
    this.pool = new Piscina({
      filename: new URL(`./prepare-thread.${fromSource ? 'ts' : 'js'}`, import.meta.url).href,
      minThreads: 1,
      maxThreads: this.threads,
      maxQueue: this.options.maxQueue ?? DEFAULT_MAX_QUEUE,
      // note: run from TypeScript (npm start, the tests), each thread loads the task through tsx
      // as the main thread does; the built service runs plain JavaScript.
      ...(fromSource ? { execArgv: ['--import', 'tsx'] } : {}),
    });
    return this.pool;
  }
}
