import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** Where CPU time is read: a whole process, or one thread of it (`thread` is its id, the event loop's being the process's own). */
export type CpuSource = number | { pid: number; thread: number };

/** CPU time (user + system) a process or a thread has used, in ms; 0 when it is gone. */
export function cpuMs(source: CpuSource): number {
  const path = typeof source === 'number' ? `/proc/${source}/stat` : `/proc/${source.pid}/task/${source.thread}/stat`;
  try {
    // note: fields after the command name, which is in parentheses and may hold spaces.
    const stat = readFileSync(path, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/**
 * CPU time every core of the machine spent busy so far, in ms: `/proc/stat`'s first line, all but
 * idle and iowait. note: what a piece of work cost the whole machine (every process it set going,
 * the load generator's too), which bounds how fast the same work can go on the machine's cores.
 */
export function machineBusyMs(): number {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/);
  const [user, nice, system, , , irq, softirq, steal] = fields.map(Number);
  return ((user! + nice! + system! + irq! + softirq! + (steal ?? 0)) * 1000) / TICKS_PER_SECOND;
}

/** A Node process's event loop: its main thread, whose id is the process's. */
export function eventLoopOf(pid: number): CpuSource {
  return { pid, thread: pid };
}

/** The pids of every process whose command name is `name` (e.g. postgres, redis-server). */
export function pidsNamed(name: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === name;
      } catch {
        return false;
      }
    });
}

const keyOf = (source: CpuSource) => (typeof source === 'number' ? `${source}` : `${source.pid}/${source.thread}`);

/**
 * CPU used by named groups of processes (or threads) while `work` runs. note: PostgreSQL forks a
 * backend per connection, so its group is looked up again at the end to include backends started
 * meanwhile.
 */
export async function cpuSplit(groups: Record<string, () => CpuSource[]>, work: () => Promise<void>): Promise<Record<string, number>> {
  const before = new Map<string, number>();
  for (const sources of Object.values(groups)) for (const source of sources()) before.set(keyOf(source), cpuMs(source));
  await work();
  const used: Record<string, number> = {};
  for (const [name, sources] of Object.entries(groups)) {
    used[name] = sources().reduce<number>((sum, source) => sum + cpuMs(source) - (before.get(keyOf(source)) ?? 0), 0);
  }
  return used;
}
