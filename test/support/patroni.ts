import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { binDir, postgresServersAvailable, postgresUser } from './postgres-servers.js';
import { freePorts } from './processes.js';

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

/** The last lines a child process wrote, stdout and stderr together, for a failure's report. */
class OutputTail {
  private lines: string[] = [];
  constructor(readonly name: string, child: ChildProcess, private readonly keep = 40) {
    const take = (chunk: Buffer) => {
      this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      if (this.lines.length > this.keep) this.lines.splice(0, this.lines.length - this.keep);
    };
    child.stdout?.on('data', take);
    child.stderr?.on('data', take);
    child.once('exit', (code, signal) => this.lines.push(`(exited: ${signal ?? code})`));
  }
  report(): string {
    return `--- ${this.name}, its last ${this.lines.length} lines:\n${this.lines.join('\n')}`;
  }
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
  /** the processes this cluster stopped on purpose (kill), whose exit is no failure */
  const killed = new Set<ChildProcess>();
  const nodes: PatroniNode[] = [];
  const tails: OutputTail[] = [];
  const etcdDirs: string[] = [];
  // note: a start that fails says why in the test's own error: what each process wrote last and
  // what each node's REST API answered last.
  const lastAnswers = new Map<string, string>();
  // note: a process that dies while the cluster starts ends the wait at once (a Patroni whose
  // bootstrap failed exits; waiting out the minute told nothing more).
  const untilOrExplain = (what: string, probe: () => Promise<boolean>, timeoutMs: number) =>
    until(what, async () => {
      const dead = [...children, ...nodes.map((node) => node.child)].find((child) => child.exitCode !== null || child.signalCode !== null);
      if (dead !== undefined && !killed.has(dead)) throw new StartFailed(`${what}: a process of the cluster exited (${dead.spawnfile}, ${dead.signalCode ?? dead.exitCode})`);
      return probe();
    }, timeoutMs, () =>
      [
        ...tails.map((tail) => tail.report()),
        ...nodes.map((node) => `--- ${node.name} GET /patroni last answered: ${lastAnswers.get(node.name) ?? '(nothing)'}`),
      ].join('\n'),
    );
  const roleOf = async (node: PatroniNode) => {
    const answer = await patroniState(node);
    lastAnswers.set(node.name, answer.raw);
    return answer.role;
  };

  // note: Patroni runs in a process group of its own, so that stopping it also stops the initdb or
  // pg_basebackup it may be running; PostgreSQL itself leaves that group (Patroni detaches it),
  // so pg_ctl stops it after.
  const stopChild = async (child: ChildProcess, signal: NodeJS.Signals) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    const send = (sig: NodeJS.Signals) => {
      try {
        if (child.pid !== undefined && nodes.some((node) => node.child === child)) process.kill(-child.pid, sig);
        else child.kill(sig);
      } catch {
        child.kill(sig);
      }
    };
    send(signal);
    const timer = setTimeout(() => send('SIGKILL'), 10_000);
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
    for (const path of [dir, ...etcdDirs]) rmSync(path, { recursive: true, force: true, maxRetries: 5 });
  };

  try {
    // note: every port of the cluster chosen at once, so that no two are the same.
    const [etcdClient, etcdPeer, ...nodePorts] = (await freePorts(6)) as [number, number, number, number, number, number];
    // note: etcd fsyncs every write of the leader lease; on tmpfs (when there is one) a disk busy
    // with an earlier test's writeback cannot hold a renewal past Patroni's retry_timeout.
    const etcdDir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : dir, 'patroni-etcd-'));
    etcdDirs.push(etcdDir);
    if (user) chownSync(etcdDir, user.uid, user.gid);
    const etcd = spawn(
      '/usr/bin/etcd',
      [
        '--name', 'test', '--data-dir', etcdDir,
        '--listen-client-urls', `http://127.0.0.1:${etcdClient}`, '--advertise-client-urls', `http://127.0.0.1:${etcdClient}`,
        '--listen-peer-urls', `http://127.0.0.1:${etcdPeer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${etcdPeer}`,
        '--initial-cluster', `test=http://127.0.0.1:${etcdPeer}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], ...asPostgres },
    );
    children.push(etcd);
    tails.push(new OutputTail('etcd', etcd));
    await untilOrExplain('etcd answers', async () => (await fetch(`http://127.0.0.1:${etcdClient}/health`)).ok, 20_000);

    const startNode = async (name: string): Promise<PatroniNode> => {
      const [port, restPort] = nodePorts.splice(0, 2) as [number, number];
      const dataDir = join(dir, name);
      const config = join(dir, `${name}.yml`);
      writeFileSync(config, patroniConfig({ name, port, restPort, etcdClient, dataDir, bin, socketDir: dir }));
      if (user) chownSync(config, user.uid, user.gid);
      const child = spawn('/usr/bin/patroni', [config], { stdio: ['ignore', 'pipe', 'pipe'], detached: true, ...asPostgres });
      tails.push(new OutputTail(`patroni ${name}`, child));
      const node: PatroniNode = {
        name,
        port,
        restPort,
        dataDir,
        child,
        url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
      };
      nodes.push(node);
      return node;
    };

    const first = await startNode('node1');
    await untilOrExplain('node1 leads', async () => (await roleOf(first)) === 'primary', 60_000);
    const second = await startNode('node2');
    await untilOrExplain('node2 streams synchronously', async () => {
      await roleOf(second);
      return (await syncStandby(first)) === 'node2';
    }, 60_000);

    return {
      nodes,
      async waitForLeader({ except, timeoutMs = 60_000 } = {}) {
        let leader: PatroniNode | undefined;
        await untilOrExplain('a new leader', async () => {
          for (const node of nodes) {
            if (node === except) continue;
            if ((await roleOf(node)) === 'primary') leader = node;
          }
          return leader !== undefined;
        }, timeoutMs);
        return leader!;
      },
      async kill(node) {
        killed.add(node.child);
        await stopChild(node.child, 'SIGKILL');
        pgCtlStop(node.dataDir);
      },
      stop,
    };
  } catch (error) {
    // note: the start's own error is the one to see; a failing clean-up only adds to it.
    await stop().catch((stopError: unknown) => console.warn(`Patroni cluster clean-up after a failed start: ${String(stopError)}`));
    throw error;
  }
}

/** `GET /patroni` on the node: its role when it runs, and what it answered (or why nothing), cut short. */
async function patroniState(node: PatroniNode): Promise<{ role: string | undefined; raw: string }> {
  try {
    const res = await fetch(`http://127.0.0.1:${node.restPort}/patroni`, { signal: AbortSignal.timeout(1_000) });
    const raw = (await res.text()).slice(0, 2_000);
    const body = JSON.parse(raw) as { role?: string; state?: string };
    // note: Patroni before 3.0.? says master where later ones say primary.
    const running = body.state === 'running' ? (body.role === 'master' ? 'primary' : body.role) : undefined;
    return { role: running, raw: `${res.status} ${raw}` };
  } catch (error) {
    return { role: undefined, raw: `no answer: ${(error as Error).message}` };
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

/** A start that cannot succeed any more: thrown by a probe to end its wait at once. */
class StartFailed extends Error {}

async function until(what: string, probe: () => Promise<boolean>, timeoutMs: number, explain?: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const explained = (text: string) => new Error(`${text}${explain ? `\n${explain()}` : ''}`);
  for (let i = 0; i < 1_000 && Date.now() < deadline; i += 1) {
    try {
      if (await probe()) return;
    } catch (error) {
      if (error instanceof StartFailed) throw explained(error.message);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw explained(`${what}: not within ${timeoutMs} ms`);
}

function patroniConfig(o: { name: string; port: number; restPort: number; etcdClient: number; dataDir: string; bin: string; socketDir: string }): string {
  return `scope: bulk-import-test
name: ${o.name}
log:
  level: INFO
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
watchdog:
  mode: off
tags:
  nofailover: false
  noloadbalance: false
  clonefrom: false
`;
}
