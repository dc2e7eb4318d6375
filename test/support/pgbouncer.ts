import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { freePort } from './processes.js';

const BINARY = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((path) => existsSync(path));

export function pgbouncerAvailable(): boolean {
  return BINARY !== undefined;
}

export interface PgBouncer {
  port: number;
  child: ChildProcess;
  /** `postgresUrl` with its host and port replaced by PgBouncer's */
  urlFor(postgresUrl: string): string;
  stop(): Promise<void>;
}

function postgresUser(): { uid: number; gid: number } | undefined {
  const uid = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
  if (uid.status !== 0 || gid.status !== 0) return undefined;
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/**
 * PgBouncer in front of the PostgreSQL at `target` (host:port), in transaction pooling mode, on
 * a loopback port, as a child of this process. Every database name is passed through (`*`), so
 * the per-file test databases work through it. note: PgBouncer refuses to run as root, so it
 * runs as the postgres user when this process is root.
 */
export async function startPgBouncer(target: { host: string; port: number }, poolMode: 'transaction' | 'session' = 'transaction'): Promise<PgBouncer> {
  if (BINARY === undefined) throw new Error('pgbouncer is not installed (apt-get install pgbouncer)');
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'pgbouncer-'));
  const user = process.getuid?.() === 0 ? postgresUser() : undefined;
  writeFileSync(join(dir, 'userlist.txt'), '"postgres" ""\n');
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${target.host} port=${target.port}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      `pool_mode = ${poolMode}`,
      'max_client_conn = 2000',
      // note: server connections stay well below PostgreSQL's 100 however many test databases
      // are open at once; clients beyond them wait for one, as in production.
      'default_pool_size = 10',
      'max_user_connections = 40',
      // note: per-file test databases are dropped with (force) while PgBouncer may hold a server
      // connection to them; it notices at the next use.
      'server_check_delay = 0',
      'ignore_startup_parameters = extra_float_digits,options',
      '',
    ].join('\n'),
  );
  if (user) {
    for (const file of ['', 'userlist.txt', 'pgbouncer.ini']) chownSync(join(dir, file), user.uid, user.gid);
  }
  const child = spawn(BINARY, [join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'ignore', 'pipe'], ...(user ? { uid: user.uid, gid: user.gid } : {}) });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, 'exit');
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const urlFor = (postgresUrl: string) => {
    const url = new URL(postgresUrl);
    url.hostname = '127.0.0.1';
    url.port = String(port);
    return url.toString();
  };
  const deadline = Date.now() + 10_000;
  for (let attempt = 0; attempt < 100; attempt += 1) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`pgbouncer exited: ${stderr}`);
    }
    const probe = postgres(`postgres://postgres@127.0.0.1:${port}/postgres`, { max: 1, connect_timeout: 1, prepare: false, onnotice: () => {} });
    const ready = await probe`select 1`.then(() => true, () => false);
    await probe.end({ timeout: 1 });
    if (ready) return { port, child, urlFor, stop };
    if (Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await stop();
  throw new Error(`pgbouncer did not accept connections: ${stderr}`);
}
