import { readFileSync } from 'node:fs';

/** A process's resident memory in MB (VmRSS of /proc/<pid>/status), or undefined off Linux or once it has exited. */
export function rssMb(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? undefined : Math.round(Number(kb) / 1024);
  } catch {
    return undefined;
  }
}

/**
 * The API's resident memory over the load: what it was as the load began, its peak, its last
 * reading, and the peak of each `bucketMs` (memory that grows without bound climbs from bucket
 * to bucket), sampled every `everyMs`. note: resident memory, not the heap: a body held whole,
 * or a record parsed into millions of cells, shows there whichever allocator holds it.
 */
export class MemoryWatch {
  atStartMb: number | undefined;
  maxMb: number | undefined;
  lastMb: number | undefined;
  readonly timeline: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  private now: () => number = () => 0;

  constructor(
    private readonly pid: number | undefined,
    private readonly bucketMs: number,
  ) {}

  /** Samples from now on; `now` is the load's clock (ms). */
  start(now: () => number, everyMs = 1_000): void {
    this.now = now;
    this.atStartMb = this.sample();
    this.timer = setInterval(() => this.sample(), everyMs);
    this.timer.unref();
  }

  /** One reading now, which also counts towards the peaks. */
  sample(): number | undefined {
    const mb = rssMb(this.pid);
    if (mb !== undefined) {
      this.lastMb = mb;
      this.maxMb = Math.max(this.maxMb ?? 0, mb);
      const bucket = Math.floor(this.now() / this.bucketMs);
      while (this.timeline.length <= bucket) this.timeline.push(0);
      this.timeline[bucket] = Math.max(this.timeline[bucket]!, mb);
    }
    return mb;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
