import { createReadStream, createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { ServiceProcess } from '../../test/support/processes.js';

/** Lines of a process's output kept in memory; the log file has them all. */
const KEPT_IN_MEMORY = 500;

/**
 * One log file for the whole soak: every line the API and the workers print, prefixed with the
 * process, and the soak's own notes (kills, failed attempts), so a failing import can be followed
 * across processes by its request ids and job ids afterwards.
 */
export class SoakLog {
  private readonly out: WriteStream;
  /** ms since the load started, as the summary counts time; set when it starts */
  loadClock: (() => number) | undefined;

  constructor(readonly path: string) {
    mkdirSync(dirname(path), { recursive: true });
    this.out = createWriteStream(path, { flags: 'a' });
  }

  /** The soak's own line. */
  note(text: string): void {
    // note: the wall clock, which the processes' lines carry too (pino's `time`), and the load's.
    const load = this.loadClock === undefined ? '' : ` load+${(this.loadClock() / 1000).toFixed(3)}s`;
    this.out.write(`soak ${new Date().toISOString()}${load} | ${text}\n`);
  }

  /** Copies a process's output into the file, line by line, as it comes. */
  attach(process: ServiceProcess, label: string): void {
    const prefix = `${label} pid=${process.child.pid}`;
    // note: what it printed while starting, before it was handed over here.
    for (const line of process.output) this.out.write(`${prefix} | ${line}\n`);
    const copy = (stream: Readable | null) => {
      let partial = '';
      stream?.on('data', (chunk: Buffer) => {
        const text = partial + chunk.toString('utf8');
        const end = text.lastIndexOf('\n');
        partial = text.slice(end + 1);
        if (end >= 0) {
          for (const line of text.slice(0, end).split('\n')) if (line !== '') this.out.write(`${prefix} | ${line}\n`);
        }
        // note: the process keeps its lines for waitForOutput; a 15-minute soak would keep
        // hundreds of thousands. Its start-up line is matched before this trims anything.
        if (process.output.length > 2 * KEPT_IN_MEMORY) process.output.splice(0, process.output.length - KEPT_IN_MEMORY);
      });
      stream?.on('end', () => {
        if (partial !== '') this.out.write(`${prefix} | ${partial}\n`);
      });
    };
    copy(process.child.stdout);
    copy(process.child.stderr);
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.out.end(resolve));
  }
}

/** The lines of `path` that contain any of `needles`, at most `max` per needle group, in file order. */
export async function linesMentioning(path: string, groups: Map<string, string[]>, max: number): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>([...groups.keys()].map((name) => [name, []]));
  const lines = createInterface({ input: createReadStream(path, 'utf8'), crlfDelay: Infinity });
  for await (const line of lines) {
    for (const [name, needles] of groups) {
      const kept = found.get(name)!;
      if (kept.length < max && needles.some((needle) => line.includes(needle))) kept.push(line.length > 1_000 ? `${line.slice(0, 1_000)}…` : line);
    }
  }
  return found;
}
