import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './processes.js';

/** One redis-server process this test run started, on a loopback port. */
export interface RedisServer {
  port: number;
  child: ChildProcess;
  /** a client of this one server (not cluster- or sentinel-aware), over TLS when the port speaks it */
  client(): Redis;
  /** SIGSTOP: the server keeps its sockets but answers nothing, as a hung master would */
  freeze(): void;
  thaw(): void;
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 10_000;

export function redisServerAvailable(): boolean {
  return spawnSync('redis-server', ['--version']).status === 0 && spawnSync('redis-cli', ['--version']).status === 0;
}

export function opensslAvailable(): boolean {
  return spawnSync('openssl', ['version']).status === 0;
}

/** PEM files of a throwaway CA and of a certificate it signed for 127.0.0.1 and localhost. */
export interface TestCertificates {
  caFile: string;
  certFile: string;
  keyFile: string;
}

/**
 * Made with openssl in `dir`, so they go when the directory is removed; valid for a day.
 * note: P-256 keys, generated in milliseconds where RSA would take a while on a busy machine.
 */
export function createTestCertificates(dir: string): TestCertificates {
  const file = (name: string) => join(dir, name);
  const openssl = (args: string[]) => {
    const result = spawnSync('openssl', args, { encoding: 'utf8', timeout: 30_000 });
    if (result.status !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr}`);
  };
  const newKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(['req', '-x509', ...newKey, '-keyout', file('ca.key'), '-out', file('ca.crt'), '-days', '1', '-subj', '/CN=bulk-import test CA']);
  openssl(['req', ...newKey, '-keyout', file('server.key'), '-out', file('server.csr'), '-subj', '/CN=localhost']);
  writeFileSync(file('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n');
  openssl([
    'x509', '-req', '-in', file('server.csr'), '-CA', file('ca.crt'), '-CAkey', file('ca.key'), '-set_serial', '1',
    '-days', '1', '-extfile', file('server.ext'), '-out', file('server.crt'),
  ]);
  return { caFile: file('ca.crt'), certFile: file('server.crt'), keyFile: file('server.key') };
}

export interface RedisServerOptions {
  /** `redis-server <conf> --sentinel`; extraArgs are then lines of its config file */
  sentinel?: boolean;
  /**
   * The server's certificate: its port then speaks TLS only, and it reaches the servers it
   * replicates or monitors over TLS.
   */
  tls?: TestCertificates;
  /** with `tls`: its own port speaks plain text; TLS is used only towards the servers it reaches */
  plainPort?: boolean;
  /** `--requirepass`: the probe and client() authenticate with it */
  password?: string;
}

/** redis.conf directives, as [name, value] */
function portSettings(port: number, options: RedisServerOptions): [string, string][] {
  const { tls } = options;
  if (tls === undefined) return [['port', String(port)]];
  const tlsPort = options.plainPort !== true;
  return [
    ['port', tlsPort ? '0' : String(port)],
    ['tls-port', tlsPort ? String(port) : '0'],
    ['tls-cert-file', tls.certFile],
    ['tls-key-file', tls.keyFile],
    ['tls-ca-cert-file', tls.caFile],
    // note: the clients show no certificate of their own; the servers' is what is tested.
    ['tls-auth-clients', 'no'],
    ['tls-replication', 'yes'],
  ];
}

/** ioredis options that reach `port` of a server started with `options` (the CA given explicitly) */
function clientOptions(port: number, options: RedisServerOptions) {
  const tls = options.tls !== undefined && options.plainPort !== true ? { tls: { ca: readFileSync(options.tls.caFile) } } : {};
  return { port, host: '127.0.0.1', ...tls, ...(options.password === undefined ? {} : { password: options.password }) };
}

/** A scratch directory for the servers' files, removed by the returned function. */
export function scratchDir(name: string): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), `${name}-`));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs = START_TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; attempt < 500; attempt += 1) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${what} within ${timeoutMs} ms`);
}

/**
 * Starts `redis-server` (or `redis-server <conf> --sentinel`) in the foreground as a child of this
 * process, so it is stopped by its pid. note: nothing is persisted (no RDB, no AOF).
 */
export async function startRedisServer(dir: string, extraArgs: string[] = [], options: RedisServerOptions = {}): Promise<RedisServer> {
  const port = await freePort();
  const ports = portSettings(port, options);
  const args = options.sentinel
    ? sentinelArgs(dir, port, [...ports.map(([name, value]) => `${name} ${value}`), ...extraArgs])
    : [
        ...ports.flatMap(([name, value]) => [`--${name}`, value]),
        ...(options.password === undefined ? [] : ['--requirepass', options.password]),
        '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extraArgs,
      ];
  const child = spawn('redis-server', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = once(child, 'exit');
  const probe = new Redis({ ...clientOptions(port, options), lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => undefined); // note: refused until the server listens; the loop retries
  try {
    await waitUntil(`redis-server on ${port} did not answer`, async () => {
      if (child.exitCode !== null) throw new Error(`redis-server on ${port} exited with ${child.exitCode}`);
      if (probe.status !== 'ready') await probe.connect();
      return (await probe.ping()) === 'PONG';
    });
  } finally {
    probe.disconnect();
  }
  return {
    port,
    child,
    client: () => new Redis({ ...clientOptions(port, options), maxRetriesPerRequest: 1, retryStrategy: () => null }).on('error', () => undefined),
    freeze: () => child.kill('SIGSTOP'),
    thaw: () => child.kill('SIGCONT'),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGCONT');
      child.kill('SIGKILL');
      await exited;
    },
  };
}

function sentinelArgs(dir: string, port: number, lines: string[]): string[] {
  // note: a sentinel rewrites its config file, so each gets its own.
  const conf = join(dir, `sentinel-${port}.conf`);
  writeFileSync(conf, ['bind 127.0.0.1', `dir ${dir}`, ...lines, ''].join('\n'));
  return [conf, '--sentinel'];
}

export interface RedisCluster {
  masters: RedisServer[];
  /** `host:port,...`, the value of REDIS_CLUSTER_NODES */
  nodesEnv: string;
  stop(): Promise<void>;
}

/** A Redis Cluster of `size` masters and no replicas, created with `redis-cli --cluster create`. */
export async function startRedisCluster(size = 3): Promise<RedisCluster> {
  const dir = scratchDir('redis-cluster');
  const masters: RedisServer[] = [];
  const stop = async () => {
    await Promise.all(masters.map((m) => m.stop()));
    dir.remove();
  };
  try {
    for (let i = 0; i < size; i += 1) {
      const nodeDir = join(dir.path, `node-${i}`);
      rmSync(nodeDir, { recursive: true, force: true });
      spawnSync('mkdir', ['-p', nodeDir]);
      // note: the bus port is chosen too, since port + 10000 may be taken or out of range.
      const busPort = await freePort();
      masters.push(
        await startRedisServer(nodeDir, [
          '--cluster-enabled', 'yes',
          '--cluster-config-file', join(nodeDir, 'nodes.conf'),
          '--cluster-port', String(busPort),
          '--cluster-node-timeout', '2000',
        ]),
      );
    }
    const nodes = masters.map((m) => `127.0.0.1:${m.port}`);
    const created = spawnSync('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', '0', '--cluster-yes'], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    if (created.status !== 0) throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
    for (const master of masters) {
      const client = master.client();
      try {
        await waitUntil(`cluster node ${master.port} did not report cluster_state:ok`, async () =>
          (await client.cluster('INFO')).includes('cluster_state:ok'),
        );
      } finally {
        client.disconnect();
      }
    }
    return { masters, nodesEnv: nodes.join(','), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

export interface RedisSentinelGroup {
  master: RedisServer;
  replica: RedisServer;
  sentinel: RedisServer;
  /** the monitored master's name */
  name: string;
  /** the port of the master the sentinel names now */
  currentMasterPort(): Promise<number>;
  /** waits until the sentinel names a master other than `port` and that server reports role master */
  waitForNewMaster(port: number, timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
}

/**
 * A master, one replica and one sentinel (quorum 1) that fails over after 1 s without answers.
 * note: real deployments run three sentinels; one is enough to exercise the clients' failover.
 */
export async function startRedisSentinelGroup(name = 'bulk-import-test'): Promise<RedisSentinelGroup> {
  const dir = scratchDir('redis-sentinel');
  const servers: RedisServer[] = [];
  const stop = async () => {
    await Promise.all(servers.map((s) => s.stop()));
    dir.remove();
  };
  try {
    const master = await startRedisServer(dir.path, ['--dbfilename', 'master.rdb']);
    servers.push(master);
    const replica = await startRedisServer(dir.path, ['--dbfilename', 'replica.rdb', '--replicaof', '127.0.0.1', String(master.port)]);
    servers.push(replica);
    const replicaClient = replica.client();
    try {
      await waitUntil('the replica did not sync with its master', async () =>
        (await replicaClient.info('replication')).includes('master_link_status:up'),
      );
    } finally {
      replicaClient.disconnect();
    }
    const sentinel = await startRedisServer(
      dir.path,
      [
        `sentinel monitor ${name} 127.0.0.1 ${master.port} 1`,
        `sentinel down-after-milliseconds ${name} 1000`,
        `sentinel failover-timeout ${name} 5000`,
        `sentinel parallel-syncs ${name} 1`,
      ],
      { sentinel: true },
    );
    servers.push(sentinel);

    const currentMasterPort = async (): Promise<number> => {
      const client = sentinel.client();
      try {
        const reply = (await client.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name)) as [string, string] | null;
        return Number(reply?.[1]);
      } finally {
        client.disconnect();
      }
    };
    // note: the sentinel must have found the replica before it can promote it.
    const sentinelClient = sentinel.client();
    try {
      await waitUntil('the sentinel did not discover the replica', async () => {
        const replicas = (await sentinelClient.call('SENTINEL', 'REPLICAS', name)) as string[][];
        return replicas.length === 1;
      });
    } finally {
      sentinelClient.disconnect();
    }
    return {
      master,
      replica,
      sentinel,
      name,
      currentMasterPort,
      async waitForNewMaster(port, timeoutMs = 20_000) {
        let found = 0;
        await waitUntil(
          `no master other than ${port} was promoted`,
          async () => {
            const now = await currentMasterPort();
            if (now === port) return false;
            const server = servers.find((s) => s.port === now);
            const client = server?.client();
            try {
              const role = (await client?.call('ROLE')) as [string] | undefined;
              found = now;
              return role?.[0] === 'master';
            } finally {
              client?.disconnect();
            }
          },
          timeoutMs,
        );
        return found;
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

export interface RedisTlsSentinels {
  certificates: TestCertificates;
  /** speaks TLS only */
  master: RedisServer;
  /** speaks TLS only, and reaches the master over TLS */
  sentinel: RedisServer;
  /** speaks plain text, and reaches the master over TLS */
  plainSentinel: RedisServer;
  /** the monitored master's name */
  name: string;
  stop(): Promise<void>;
}

/**
 * A TLS-only master (no replica) watched by two sentinels, one speaking TLS and one plain text,
 * with a throwaway CA that only the clients given it trust. Everything lives in one scratch
 * directory, removed by stop().
 */
export async function startRedisTlsSentinels(name = 'bulk-import-tls'): Promise<RedisTlsSentinels> {
  const dir = scratchDir('redis-tls');
  const servers: RedisServer[] = [];
  const stop = async () => {
    await Promise.all(servers.map((s) => s.stop()));
    dir.remove();
  };
  try {
    const certificates = createTestCertificates(dir.path);
    const master = await startRedisServer(dir.path, [], { tls: certificates });
    servers.push(master);
    const monitor = [`sentinel monitor ${name} 127.0.0.1 ${master.port} 1`];
    const sentinel = await startRedisServer(dir.path, monitor, { sentinel: true, tls: certificates });
    servers.push(sentinel);
    const plainSentinel = await startRedisServer(dir.path, monitor, { sentinel: true, tls: certificates, plainPort: true });
    servers.push(plainSentinel);
    // note: a sentinel that cannot reach the master still names it; the master's run id (from its
    // INFO) shows that the sentinel's TLS to it works, so a client that fails has itself to blame.
    for (const server of [sentinel, plainSentinel]) {
      const client = server.client();
      try {
        await waitUntil(`sentinel ${server.port} did not hear from the TLS master`, async () => {
          const fields = (await client.call('SENTINEL', 'MASTER', name)) as string[];
          const field = (key: string) => (fields.includes(key) ? (fields[fields.indexOf(key) + 1] ?? '') : '');
          return field('runid') !== '' && !field('flags').includes('disconnected');
        });
      } finally {
        client.disconnect();
      }
    }
    return { certificates, master, sentinel, plainSentinel, name, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
