import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { binDir, postgresServersAvailable, postgresUser } from './postgres-servers.js';
import { freePort } from './processes.js';

/** Whether Patroni, etcd and PostgreSQL are installed (Debian's patroni and etcd-server packages). */
export function patroniAvailable(): boolean {
  return existsSync('/usr/bin/patroni') && existsSync('/usr/bin/etcd') && postgresServersAvailable();
}

export interface PatroniNode {
  name: string;
  /** PostgreSQL's port */
  port: number;
  /** Patroni's REST API port */
  restPort: number;
  dataDir: string;
  child: ChildProcess;
  url(database?: string): string;
}

export interface PatroniCluster {
  nodes: PatroniNode[];
  /** the node whose REST API says it is the primary and that a synchronous standby streams from */
  waitForLeader(options?: { except?: PatroniNode; timeoutMs?: number }): Promise<PatroniNode>;
  /** the node dies whole: its Patroni (SIGKILL) and its PostgreSQL (`pg_ctl stop -m immediate`) */
  kill(node: PatroniNode): Promise<void>;
  stop(): Promise<void>;
}

/** Patroni's loop and its leader lease, in seconds: a dead leader's lease runs out within TTL_SEC. */
export const TTL_SEC = 10;
const LOOP_WAIT_SEC = 2;
const RETRY_TIMEOUT_SEC = 3;

/**
 * A single etcd and two Patroni nodes in `synchronous_mode`, each a child process of this one on
 * loopback ports, with nothing kept after stop(). The first node bootstraps the cluster; the
 * second joins it as a streaming standby and becomes its synchronous standby.
 */
export async function startPatroniCluster(): Promise<PatroniCluster> {
  const bin = binDir()!;
  const user = process.getuid?.() === 0 ? postgresUser() : undefined;
  const asPostgres = user ? { uid: user.uid, gid: user.gid } : {};
  const dir = mkdtempSync(join(tmpdir(), 'patroni-'));
  if (user) chownSync(dir, user.uid, user.gid);
  const children: ChildProcess[] = [];
  const nodes: PatroniNode[] = [];

  const stopChild = async (child: ChildProcess, signal: NodeJS.Signals) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  const pgCtlStop = (dataDir: string) => {
    if (existsSync(join(dataDir, 'postmaster.pid'))) {
      spawnSync(join(bin, 'pg_ctl'), ['stop', '-D', dataDir, '-m', 'immediate', '-w'], { ...asPostgres, timeout: 20_000 });
    }
  };
  const stop = async () => {
    // note: Patroni first, so it does not start PostgreSQL again; then whatever PostgreSQL is left.
    await Promise.all(nodes.map((node) => stopChild(node.child, 'SIGKILL')));
    for (const node of nodes) pgCtlStop(node.dataDir);
    await Promise.all(children.map((child) => stopChild(child, 'SIGTERM')));
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    const [etcdClient, etcdPeer] = [await freePort(), await freePort()];
    const etcdDir = join(dir, 'etcd');
    mkdirSync(etcdDir);
    if (user) chownSync(etcdDir, user.uid, user.gid);
    const etcd = spawn(
      '/usr/bin/etcd',
      [
        '--name', 'test', '--data-dir', etcdDir,
        '--listen-client-urls', `http://127.0.0.1:${etcdClient}`, '--advertise-client-urls', `http://127.0.0.1:${etcdClient}`,
        '--listen-peer-urls', `http://127.0.0.1:${etcdPeer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${etcdPeer}`,
        '--initial-cluster', `test=http://127.0.0.1:${etcdPeer}`,
      ],
      { stdio: 'ignore', ...asPostgres },
    );
    children.push(etcd);
    await until('etcd answers', async () => (await fetch(`http://127.0.0.1:${etcdClient}/health`)).ok, 20_000);

    const startNode = async (name: string): Promise<PatroniNode> => {
      const [port, restPort] = [await freePort(), await freePort()];
      const dataDir = join(dir, name);
      const config = join(dir, `${name}.yml`);
      writeFileSync(config, patroniConfig({ name, port, restPort, etcdClient, dataDir, bin, socketDir: dir }));
      if (user) chownSync(config, user.uid, user.gid);
      const child = spawn('/usr/bin/patroni', [config], { stdio: ['ignore', 'ignore', 'pipe'], ...asPostgres });
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4_000)));
      const node: PatroniNode = {
        name,
        port,
        restPort,
        dataDir,
        child,
        url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
      };
      nodes.push(node);
      child.once('exit', (code) => {
        if (code !== null && code !== 0) console.warn(`patroni ${name} exited ${code}: ${stderr}`);
      });
      return node;
    };

    const first = await startNode('node1');
    await until('node1 leads', async () => (await role(first)) === 'primary', 60_000);
    await startNode('node2');
    await until('node2 streams synchronously', async () => (await syncStandby(first)) === 'node2', 60_000);

    return {
      nodes,
      async waitForLeader({ except, timeoutMs = 60_000 } = {}) {
        let leader: PatroniNode | undefined;
        await until('a new leader', async () => {
          for (const node of nodes) {
            if (node === except) continue;
            if ((await role(node)) === 'primary') leader = node;
          }
          return leader !== undefined;
        }, timeoutMs);
        return leader!;
      },
      async kill(node) {
        await stopChild(node.child, 'SIGKILL');
        pgCtlStop(node.dataDir);
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** What the node's REST API says it is: `primary`, `replica`, or undefined when it does not answer or is not running. */
async function role(node: PatroniNode): Promise<string | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${node.restPort}/patroni`, { signal: AbortSignal.timeout(1_000) });
    const body = (await res.json()) as { role?: string; state?: string };
    // note: Patroni before 3.0.? says master where later ones say primary.
    return body.state === 'running' ? (body.role === 'master' ? 'primary' : body.role) : undefined;
  } catch {
    return undefined;
  }
}

/** The name of the synchronous standby the cluster lists, read through `node`'s REST API. */
async function syncStandby(node: PatroniNode): Promise<string | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${node.restPort}/cluster`, { signal: AbortSignal.timeout(1_000) });
    const body = (await res.json()) as { members?: { name: string; role: string; state: string }[] };
    return body.members?.find((m) => m.role === 'sync_standby' && (m.state === 'streaming' || m.state === 'running'))?.name;
  } catch {
    return undefined;
  }
}

async function until(what: string, probe: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; i < 1_000 && Date.now() < deadline; i += 1) {
    if (await probe().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${what}: not within ${timeoutMs} ms`);
}

function patroniConfig(o: { name: string; port: number; restPort: number; etcdClient: number; dataDir: string; bin: string; socketDir: string }): string {
  return `scope: bulk-import-test
name: ${o.name}
log:
  level: WARNING
restapi:
  listen: 127.0.0.1:${o.restPort}
  connect_address: 127.0.0.1:${o.restPort}
etcd3:
  hosts: 127.0.0.1:${o.etcdClient}
bootstrap:
  dcs:
    ttl: ${TTL_SEC}
    loop_wait: ${LOOP_WAIT_SEC}
    retry_timeout: ${RETRY_TIMEOUT_SEC}
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    postgresql:
      use_pg_rewind: false
      parameters:
        synchronous_commit: 'on'
        fsync: 'off'
        shared_buffers: 16MB
  initdb:
    - encoding: UTF8
    - auth: trust
  pg_hba:
    - host replication postgres 127.0.0.1/32 trust
    - host all all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:${o.port}
  connect_address: 127.0.0.1:${o.port}
  data_dir: ${o.dataDir}
  bin_dir: ${o.bin}
  pgpass: ${o.socketDir}/pgpass-${o.name}
  authentication:
    replication:
      username: postgres
    superuser:
      username: postgres
  parameters:
    unix_socket_directories: ${o.socketDir}
tags:
  nofailover: false
  noloadbalance: false
  clonefrom: false
`;
}
