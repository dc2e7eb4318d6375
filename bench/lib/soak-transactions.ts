import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import type postgres from 'postgres';

/** The inodes of the local TCP sockets bound to `ports`, from /proc/net/tcp and tcp6. */
function socketInodes(ports: Set<number>): Set<string> {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const local = fields[1];
      const inode = fields[9];
      if (local === undefined || inode === undefined) continue;
      const port = parseInt(local.slice(local.lastIndexOf(':') + 1), 16);
      if (ports.has(port)) inodes.add(inode);
    }
  }
  return inodes;
}

function holdsSocket(pid: number, inodes: Set<string>): boolean {
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
        if (target.startsWith('socket:[') && inodes.has(target.slice(8, -1))) return true;
      } catch {
        // the descriptor closed meanwhile
      }
    }
  } catch {
    // the process is gone
  }
  return false;
}

/**
 * Which of `pids` has an open transaction in the database right now: a worker in the middle of
 * writing an import. PostgreSQL knows each backend's client port; the process holding a socket
 * on that port is found through /proc (Linux only; elsewhere nothing is found).
 */
export async function pidsInTransaction(sql: postgres.Sql, pids: number[]): Promise<number[]> {
  const rows = await sql<{ client_port: number }[]>`
    select client_port from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid() and xact_start is not null and client_port is not null`;
  if (rows.length === 0) return [];
  const inodes = socketInodes(new Set(rows.map((row) => row.client_port)));
  return inodes.size === 0 ? [] : pids.filter((pid) => holdsSocket(pid, inodes));
}
