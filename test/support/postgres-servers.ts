import { spawn, spawnSync, type ChildProcess, type SpawnSyncOptions } from 'node:child_process';
import { once } from 'node:events';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { freePort } from './processes.js';

/** Debian's PostgreSQL binaries (the newest installed major), or undefined when there are none. */
export function binDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const majors = readdirSync(root).filter((name) => /^\d+$/.test(name)).sort((a, b) => Number(b) - Number(a));
  const dir = majors[0] === undefined ? undefined : join(root, majors[0], 'bin');
  return dir !== undefined && existsSync(join(dir, 'initdb')) ? dir : undefined;
}

/** The OS user PostgreSQL runs as: its binaries refuse to run as root. */
export function postgresUser(): { uid: number; gid: number } | undefined {
  const uid = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
  if (uid.status !== 0 || gid.status !== 0) return undefined;
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** Whether this machine can start PostgreSQL servers of a test's own (Debian packages, root or postgres). */
export function postgresServersAvailable(): boolean {
  return binDir() !== undefined && (process.getuid?.() !== 0 || postgresUser() !== undefined);
}

export interface PostgresServer {
  port: number;
  dataDir: string;
  child: ChildProcess;
  url(database?: string): string;
  stop(): Promise<void>;
}

export interface PrimaryAndStandby {
  primary: PostgresServer;
  standby: PostgresServer;
  /** `pg_ctl stop -m immediate`: the server dies as in a crash, without a shutdown checkpoint */
  kill(server: PostgresServer): Promise<void>;
  /** `pg_ctl promote -w`: returns once the standby accepts writes */
  promote(server: PostgresServer): void;
  stop(): Promise<void>;
}

export interface PrimaryAndStandbyOptions {
  /**
   * Synchronous replication: the standby connects as STANDBY_NAME, the primary lists it in
   * synchronous_standby_names with synchronous_commit = on, so a commit returns only once the
   * standby has flushed it.
   */
  synchronous?: boolean;
}

/** the standby's application_name, as its primary_conninfo gives it */
export const STANDBY_NAME = 'standby1';

const START_TIMEOUT_MS = 20_000;

/**
 * A throwaway primary (initdb) and a streaming standby of it (pg_basebackup -R), each a child
 * process of this one on a loopback port, with nothing kept after stop().
 */
export async function startPrimaryAndStandby(options: PrimaryAndStandbyOptions = {}): Promise<PrimaryAndStandby> {
  const bin = binDir();
  if (bin === undefined) throw new Error('no PostgreSQL binaries under /usr/lib/postgresql');
  const asRoot = process.getuid?.() === 0;
  const user = asRoot ? postgresUser() : undefined;
  const dir = mkdtempSync(join(tmpdir(), 'pg-failover-'));
  if (user) chownSync(dir, user.uid, user.gid);
  const runOptions: SpawnSyncOptions = { encoding: 'utf8', timeout: 60_000, ...(user ? { uid: user.uid, gid: user.gid } : {}) };
  const servers: PostgresServer[] = [];
  const stop = async () => {
    await Promise.all(servers.map((server) => server.stop()));
    rmSync(dir, { recursive: true, force: true });
  };
  const run = (command: string, args: string[]) => {
    const result = spawnSync(join(bin, command), args, runOptions);
    if (result.status !== 0) throw new Error(`${command} failed: ${String(result.stdout)}${String(result.stderr)}`);
  };
  const start = async (dataDir: string): Promise<PostgresServer> => {
    const port = await freePort();
    const child = spawn(
      join(bin, 'postgres'),
      ['-D', dataDir, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'shared_buffers=16MB'],
      { stdio: ['ignore', 'ignore', 'pipe'], ...(user ? { uid: user.uid, gid: user.gid } : {}) },
    );
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = once(child, 'exit');
    const server: PostgresServer = {
      port,
      dataDir,
      child,
      url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
      async stop() {
        if (child.exitCode !== null || child.signalCode !== null) return;
        // note: SIGQUIT is PostgreSQL's immediate shutdown; nothing here needs to be kept.
        child.kill('SIGQUIT');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      },
    };
    servers.push(server);
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (let attempt = 0; attempt < 200; attempt += 1) {
      if (child.exitCode !== null) throw new Error(`postgres on ${port} exited: ${stderr}`);
      const probe = postgres(server.url(), { max: 1, connect_timeout: 1, onnotice: () => {} });
      const ready = await probe`select 1`.then(() => true, () => false);
      await probe.end({ timeout: 1 });
      if (ready) return server;
      if (Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`postgres on ${port} did not accept connections within ${START_TIMEOUT_MS} ms: ${stderr}`);
  };

  const kill = async (server: PostgresServer) => {
    const exited = once(server.child, 'exit');
    if (server.child.exitCode !== null || server.child.signalCode !== null) return;
    run('pg_ctl', ['stop', '-D', server.dataDir, '-m', 'immediate', '-w']);
    await exited;
  };
  const promote = (server: PostgresServer) => run('pg_ctl', ['promote', '-D', server.dataDir, '-w', '-t', '30']);

  try {
    run('initdb', ['-D', join(dir, 'primary'), '-A', 'trust', '-U', 'postgres', '--no-sync']);
    const primary = await start(join(dir, 'primary'));
    // note: -R writes this connection string into the standby's primary_conninfo, application_name included.
    const conninfo = `host=127.0.0.1 port=${primary.port} user=postgres application_name=${STANDBY_NAME}`;
    run('pg_basebackup', ['-d', conninfo, '-D', join(dir, 'standby'), '-R', '-X', 'stream']);
    const standby = await start(join(dir, 'standby'));
    if (options.synchronous) await makeSynchronous(primary);
    return { primary, standby, kill, promote, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * Turns synchronous replication on once the standby streams, and waits until the primary counts
 * it as synchronous. note: ALTER SYSTEM after the base backup, so the standby's copy of the
 * configuration does not name a synchronous standby of its own: once promoted, it would wait for
 * one for ever.
 */
async function makeSynchronous(primary: PostgresServer): Promise<void> {
  const sql = postgres(primary.url(), { max: 1, onnotice: () => {} });
  try {
    // note: unsafe, as ALTER SYSTEM takes no bound parameters; the name is a constant.
    await sql.unsafe(`alter system set synchronous_standby_names = '${STANDBY_NAME}'`);
    await sql`alter system set synchronous_commit = 'on'`;
    await sql`select pg_reload_conf()`;
    for (let attempt = 0; attempt < 100; attempt += 1) {
      const rows = await sql`select 1 from pg_stat_replication where application_name = ${STANDBY_NAME} and sync_state = 'sync'`;
      if (rows.length === 1) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`the standby did not become synchronous: ${JSON.stringify(await sql`select application_name, state, sync_state from pg_stat_replication`)}`);
  } finally {
    await sql.end({ timeout: 5 });
  }
}
