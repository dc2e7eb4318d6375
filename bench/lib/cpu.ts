import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** CPU time (user + system) a process has used, in ms; 0 when it is gone. */
export function cpuMs(pid: number): number {
  try {
    // note: fields after the command name, which is in parentheses and may hold spaces.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
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

/**
 * CPU used by named groups of processes while `work` runs. note: PostgreSQL forks a backend per
 * connection, so its group is looked up again at the end to include backends started meanwhile.
 */
export async function cpuSplit(groups: Record<string, () => number[]>, work: () => Promise<void>): Promise<Record<string, number>> {
  const before = new Map<number, number>();
  for (const pids of Object.values(groups)) for (const pid of pids()) before.set(pid, cpuMs(pid));
  await work();
  const used: Record<string, number> = {};
  for (const [name, pids] of Object.entries(groups)) {
    used[name] = pids().reduce((sum, pid) => sum + cpuMs(pid) - (before.get(pid) ?? 0), 0);
  }
  return used;
}
