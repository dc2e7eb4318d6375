import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net, { type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import postgres from 'postgres';
import { afterAll, assert, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createSql, type Sql } from '../../../src/shared/infra/db.js';
import { connectWithNoDelay } from '../../../src/shared/infra/db-socket.js';
import { postgresServersAvailable, startPrimaryAndStandby, type PrimaryAndStandby } from '../../support/postgres-servers.js';

/**
 * Ports nothing listens on. note: not a free port picked at random: a parallel test file may
 * start listening on it meanwhile, and a host that accepts and never answers is another case.
 */
const DEAD_PORTS = [1, 2];

/** Node keeps a socket's TCP_NODELAY wish under this symbol and applies it on connect. */
function noDelayOf(socket: Socket): unknown {
  const symbol = Object.getOwnPropertySymbols(socket).find((s) => s.description === 'kSetNoDelay');
  return symbol === undefined ? undefined : (socket as unknown as Record<symbol, unknown>)[symbol];
}

const server = new URL(inject('postgresUrl'));
const realPort = Number(server.port || 5432);

/** A port free a moment ago (the test listens on it later, to bring a host back). */
async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

async function serverOf(sql: Sql): Promise<{ port: number; standby: boolean }[]> {
  // note: concurrent queries, so the pool opens several connections.
  return Promise.all(
    Array.from({ length: 8 }, async () => {
      const [row] = await sql<{ port: number; standby: boolean }[]>`select inet_server_port() as port, pg_is_in_recovery() as standby, pg_sleep(0.05)`;
      return { port: row!.port, standby: row!.standby };
    }),
  );
}

describe('connectWithNoDelay (the PostgreSQL socket factory)', () => {
  it('skips a host that refuses and connects to the next, with TCP_NODELAY', async () => {
    const [dead] = DEAD_PORTS;
    const socket = await connectWithNoDelay(2_000)({ host: ['127.0.0.1', server.hostname], port: [dead!, realPort] });
    try {
      assert(socket instanceof net.Socket, 'a live host gives a real socket');
      expect(socket.remotePort).toBe(realPort);
      expect(noDelayOf(socket)).toBe(true);
    } finally {
      socket.destroy();
    }
  });

  it('answers the startup message with a FATAL 08001 ErrorResponse naming every host when none answers', async () => {
    const [a, b] = DEAD_PORTS;
    const refused = await connectWithNoDelay(2_000)({ host: ['127.0.0.1', '127.0.0.1'], port: [a!, b!] });
    const received: Buffer[] = [];
    refused.on('data', (chunk: Buffer) => received.push(chunk));
    const closed = new Promise((resolve) => refused.once('close', resolve));
    refused.write(Buffer.from('startup'));
    await closed;
    const message = Buffer.concat(received);
    expect(message.toString('latin1', 0, 1)).toBe('E');
    expect(message.readInt32BE(1)).toBe(message.length - 1);
    expect(message.toString('utf8', 5).split('\0')).toEqual([
      'SFATAL',
      'VFATAL',
      'C08001',
      `Mcould not connect to PostgreSQL at 127.0.0.1:${a} (ECONNREFUSED), 127.0.0.1:${b} (ECONNREFUSED)`,
      '',
      '',
    ]);
  });

  it('tries every host once per dial, though concurrent dials move the shared cursor meanwhile', async () => {
    const [dead] = DEAD_PORTS;
    const connect = connectWithNoDelay(2_000);
    const dials = Array.from({ length: 40 }, async (_, i) => {
      await new Promise((resolve) => setTimeout(resolve, i % 8));
      return connect({ host: ['127.0.0.1', server.hostname], port: [dead!, realPort] });
    });
    const sockets = await Promise.all(dials);
    try {
      expect(new Set(sockets.map((s) => (s instanceof net.Socket ? s.remotePort : 'refused')))).toEqual(new Set([realPort]));
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });

  it('fails the waiting queries at once with 08001 naming every host when none answers, and connects once one is back', async () => {
    const [dead] = DEAD_PORTS;
    const port = await freePort();
    const sql = createSql({ databaseUrl: `postgres://postgres@127.0.0.1:${dead},127.0.0.1:${port}/postgres`, databasePoolMax: 2 });
    const proxy = net.createServer((client) => {
      const upstream = net.connect(realPort, server.hostname);
      client.pipe(upstream).pipe(client);
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
    });
    try {
      for (let round = 0; round < 3; round += 1) {
        await expect(Promise.all([sql`select 1`, sql`select 2`])).rejects.toMatchObject({
          code: '08001',
          message: `could not connect to PostgreSQL at 127.0.0.1:${dead} (ECONNREFUSED), 127.0.0.1:${port} (ECONNREFUSED)`,
        });
      }
      await new Promise<void>((resolve) => proxy.listen(port, '127.0.0.1', resolve));
      const answers = await Promise.all([1, 2, 3].map(async (n) => (await sql<{ n: number }[]>`select ${n}::int as n`)[0]!.n));
      expect(answers).toEqual([1, 2, 3]);
    } finally {
      await sql.end({ timeout: 5 });
      proxy.close();
    }
  });

  it('reads IPv6 hosts in brackets, with their ports, in a multi-host DATABASE_URL', async () => {
    const [dead] = DEAD_PORTS;
    // note: the server listens on IPv4 only; this proxy gives it an IPv6 address.
    const proxy = net.createServer((client) => {
      const upstream = net.connect(realPort, server.hostname);
      client.pipe(upstream).pipe(client);
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '::1', resolve));
    const { port } = proxy.address() as net.AddressInfo;
    const sql = createSql({ databaseUrl: `postgres://postgres@[::1]:${dead},[::1]:${port}/postgres`, databasePoolMax: 2 });
    try {
      const [row] = await sql<{ n: number }[]>`select 1::int as n`;
      expect(row!.n).toBe(1);
    } finally {
      await sql.end({ timeout: 5 });
      proxy.close();
    }
  });

  it('names the host it dialled to TLS (SNI, and the name a verify-full certificate check expects)', async () => {
    // note: a server that accepts PostgreSQL's SSLRequest, then records the name the TLS hello carries.
    const dir = mkdtempSync(join(tmpdir(), 'tls-name-'));
    try {
      execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
      const names: (string | false | null)[] = [];
      const context = tls.createSecureContext({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) });
      const accepted: net.Socket[] = [];
      // note: the connection is kept open once the name is known: a server that hung up would have
      // postgres.js dial again at once, and a dial still negotiating TLS when the pool ends makes
      // postgres.js 3.4 throw from its own promise (reading the host of a socket it has dropped).
      const fake = net.createServer((socket) => {
        accepted.push(socket);
        socket.on('error', () => socket.destroy());
        socket.once('data', () => {
          socket.write('S');
          const secure = new tls.TLSSocket(socket, { isServer: true, secureContext: context });
          secure.once('secure', () => names.push(secure.servername));
          secure.on('error', () => secure.destroy());
        });
      });
      await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
      const { port } = fake.address() as net.AddressInfo;
      const sql = createSql({ databaseUrl: `postgres://postgres@localhost:${port}/postgres?sslmode=require`, databasePoolMax: 1 });
      try {
        // note: postgres.js dials again and again while a server hangs up during startup.
        void sql`select 1`.catch(() => undefined);
        for (let i = 0; i < 100 && names.length === 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 50));
        expect(names[0]).toBe('localhost');
      } finally {
        await sql.end({ timeout: 1 });
        fake.close();
        for (const socket of accepted) socket.destroy();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reaches the live server of a multi-host DATABASE_URL whose first host is dead', async () => {
    const [dead] = DEAD_PORTS;
    const sql = createSql({ databaseUrl: `postgres://postgres@127.0.0.1:${dead},${server.hostname}:${realPort}/postgres`, databasePoolMax: 4 });
    try {
      expect(new Set((await serverOf(sql)).map((s) => s.port))).toEqual(new Set([realPort]));
    } finally {
      await sql.end({ timeout: 5 });
    }
  });
});

describe.skipIf(!postgresServersAvailable())('a multi-host DATABASE_URL with target_session_attrs=primary (a primary and its standby)', () => {
  let servers: PrimaryAndStandby;

  beforeAll(async () => {
    servers = await startPrimaryAndStandby();
  }, 60_000);
  afterAll(async () => {
    await servers?.stop();
  });

  it('sends every connection of the pool to the primary, though the standby is listed first', async () => {
    const { primary, standby } = servers;
    const url = `postgres://postgres@127.0.0.1:${standby.port},127.0.0.1:${primary.port}/postgres?target_session_attrs=primary`;
    const sql = createSql({ databaseUrl: url, databasePoolMax: 4 });
    try {
      const reached = await serverOf(sql);
      expect(reached).toEqual(Array(8).fill({ port: primary.port, standby: false }));
      // A write goes through, as it could not on the standby.
      await sql`create table if not exists failover_probe (id int)`;
    } finally {
      await sql.end({ timeout: 5 });
    }
  });

  it('fails queries at once with 08001 while no host is a primary, dials the standby a few times a second, and gets through once it is one', async () => {
    const { primary, standby } = servers;
    const [dead] = DEAD_PORTS;
    // note: a proxy in front of the standby counts the connections made to it, and later turns
    // into the primary, as a promoted standby would.
    let upstreamPort = standby.port;
    let dials = 0;
    const proxy = net.createServer((client) => {
      dials += 1;
      const upstream = net.connect(upstreamPort, '127.0.0.1');
      client.pipe(upstream).pipe(client);
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const { port } = proxy.address() as net.AddressInfo;
    const sql = createSql({ databaseUrl: `postgres://postgres@127.0.0.1:${dead},127.0.0.1:${port}/postgres?target_session_attrs=primary`, databasePoolMax: 4 });
    const within = <T,>(ms: number, promise: Promise<T>) =>
      Promise.race([promise, new Promise<'still waiting'>((resolve) => setTimeout(() => resolve('still waiting'), ms))]);
    try {
      const started = Date.now();
      const outcomes = await within(3_000, Promise.all([1, 2, 3, 4].map((n) => sql`select ${n}::int`.catch((error: unknown) => error))));
      expect(outcomes).toEqual(
        Array(4).fill(
          expect.objectContaining({
            code: '08001',
            message: `could not connect to PostgreSQL at 127.0.0.1:${dead} (ECONNREFUSED), 127.0.0.1:${port} (turned away)`,
          }),
        ),
      );
      expect(Date.now() - started).toBeLessThan(1_000);
      // A query every 50 ms for 2 s, as requests keep coming.
      for (let i = 0; i < 40; i += 1) {
        await within(1_000, sql`select 1`.catch(() => undefined));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      // note: the first four, then about one each half second; before the standby was passed
      // over, each waiting connection dialled it again at once, some 50 times a second.
      expect(dials).toBeLessThanOrEqual(12);

      upstreamPort = primary.port;
      const promotedAt = Date.now();
      let reached: unknown;
      while (Date.now() - promotedAt < 3_000) {
        reached = await sql<{ standby: boolean }[]>`select pg_is_in_recovery() as standby`.then(([row]) => row, (error: unknown) => error);
        if ((reached as { standby?: boolean }).standby === false) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(reached).toEqual({ standby: false });
      expect(Date.now() - promotedAt).toBeLessThan(1_500);
    } finally {
      await sql.end({ timeout: 1 });
      proxy.close();
    }
  });

  it('never settles on the standby after the server cut off a query on the primary', async () => {
    const { primary, standby } = servers;
    const url = `postgres://postgres@127.0.0.1:${primary.port},127.0.0.1:${standby.port}/postgres?target_session_attrs=primary`;
    const sql = createSql({ databaseUrl: url, databasePoolMax: 1 });
    const admin = postgres(primary.url(), { max: 1, onnotice: () => {} });
    try {
      const [row] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
      const cut = sql`select pg_sleep(5)`.catch((error: unknown) => error);
      await new Promise((resolve) => setTimeout(resolve, 100));
      await admin`select pg_terminate_backend(${row!.pid})`;
      expect(await cut).toMatchObject({ code: 'CONNECTION_CLOSED' });
      // note: postgres.js kept the server's FATAL error and, on the next connection, failed its
      // first query with it before checking target_session_attrs, so that connection stayed on
      // the standby, where every write failed.
      const reached: unknown[] = [];
      for (let i = 0; i < 6; i += 1) {
        reached.push(await sql<{ standby: boolean }[]>`select pg_is_in_recovery() as standby`.then(([r]) => r!.standby, (error: { code?: string }) => error.code));
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(reached).not.toContain(true);
      expect(reached.at(-1)).toBe(false);
    } finally {
      await sql.end({ timeout: 1 });
      await admin.end();
    }
  });

  it('reaches the standby when it is what target_session_attrs asks for, whichever host comes first', async () => {
    const { primary, standby } = servers;
    const url = `postgres://postgres@127.0.0.1:${primary.port},127.0.0.1:${standby.port}/postgres?target_session_attrs=standby`;
    const sql = createSql({ databaseUrl: url, databasePoolMax: 4 });
    try {
      expect(await serverOf(sql)).toEqual(Array(8).fill({ port: standby.port, standby: true }));
    } finally {
      await sql.end({ timeout: 5 });
    }
  });
});
