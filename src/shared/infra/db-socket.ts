import net from 'node:net';
import { Duplex } from 'node:stream';

interface SocketOptions {
  host: string[];
  port: number[];
  path?: string | false;
}

function dial(host: string, port: number, timeoutMs: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port, noDelay: true });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(Object.assign(new Error(`connect timeout to ${host}:${port}`), { code: 'CONNECT_TIMEOUT' }));
    }, timeoutMs);
    const onError = (error: Error) => {
      clearTimeout(timer);
      reject(error);
    };
    socket.once('error', onError);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.removeListener('error', onError);
      resolve(socket);
    });
  });
}

/** A connection closed this soon after it was opened was turned away (see connectWithNoDelay). */
const TURNED_AWAY_MS = 2_000;

/**
 * Opens the PostgreSQL socket with TCP_NODELAY. postgres.js leaves Nagle's algorithm on, and a
 * large statement or a COPY then waits on the server's delayed ACK: about 40 ms per batch for
 * COPY, and a few ms on a 200-row insert. Each host gets `timeoutMs` to answer, as postgres.js's
 * own connect_timeout would give it.
 *
 * note: with a socket factory postgres.js no longer walks the hosts of a multi-host URL itself,
 * so the factory does, as libpq would. It dials the host that last worked and, when that one
 * refuses or does not answer, the next ones in turn. When postgres.js finds the host is not what
 * `target_session_attrs` asks for (a standby when the primary is wanted), it closes the
 * connection at once and dials again: a connection closed within TURNED_AWAY_MS moves the
 * cursor past its host, so the next dial goes to the next host. One cursor per pool, so every
 * connection of the pool goes straight to the host the others found. When no host answers, the
 * factory hands back a refusedConnection instead of rejecting (see there why).
 */
export function connectWithNoDelay(timeoutMs: number) {
  const dialLiveHost = dialInTurn(timeoutMs);
  return async (options: SocketOptions): Promise<net.Socket | Duplex> => {
    if (options.path) return net.connect({ path: options.path });
    try {
      return await dialLiveHost(options);
    } catch (error) {
      return refusedConnection(error);
    }
  };
}

function dialInTurn(timeoutMs: number) {
  let cursor = 0;
  return async (options: SocketOptions): Promise<net.Socket> => {
    const hosts = options.host.length > 0 ? options.host : ['127.0.0.1'];
    const failures: string[] = [];
    let lastError: unknown;
    // note: read once: a concurrent dial may move the cursor while this one waits, and reading it
    // again would try the same dead host twice and never the live one.
    const first = cursor;
    for (let attempt = 0; attempt < hosts.length; attempt += 1) {
      const index = (first + attempt) % hosts.length;
      const host = hosts[index]!;
      const port = options.port[index] ?? options.port[0] ?? 5432;
      let socket: net.Socket;
      try {
        socket = await dial(host, port, timeoutMs);
      } catch (error) {
        lastError = error;
        failures.push(`${host}:${port} (${(error as { code?: string }).code ?? (error as Error).message})`);
        continue;
      }
      cursor = index;
      const openedAt = Date.now();
      socket.once('close', () => {
        if (Date.now() - openedAt < TURNED_AWAY_MS && cursor === index) cursor = (index + 1) % hosts.length;
      });
      return socket;
    }
    throw Object.assign(new Error(`could not connect to PostgreSQL at ${failures.join(', ')}`), {
      code: (lastError as { code?: string } | undefined)?.code,
    });
  };
}

/**
 * A connection that answers the startup message with a FATAL error (SQLSTATE 08001, "unable to
 * establish connection") naming every host tried, then closes.
 *
 * note: why not reject: with a multi-host URL postgres.js swallows a socket factory's rejection
 * while connecting (it expects its own walk over the hosts to go on), so the connection and every
 * query waiting on it would hang for ever when no host answers. An error from the "server" is
 * what it does pass on: the waiting queries fail at once, as with one host, and the next query
 * dials again.
 */
export function refusedConnection(error: unknown): Duplex {
  const message = error instanceof Error ? error.message : String(error);
  return new Duplex({
    // note: ending the readable side closes the whole stream, so postgres.js sees 'close'.
    allowHalfOpen: false,
    read() {},
    write(_chunk, _encoding, callback) {
      this.push(errorResponse({ S: 'FATAL', V: 'FATAL', C: '08001', M: message }));
      this.push(null);
      callback();
    },
    final(callback) {
      callback();
    },
  });
}

/** A PostgreSQL ErrorResponse message ('E', length, then code byte + C string per field). */
function errorResponse(fields: Record<string, string>): Buffer {
  const body = Buffer.concat([
    ...Object.entries(fields).map(([code, value]) => Buffer.from(`${code}${value}\0`, 'utf8')),
    Buffer.from([0]),
  ]);
  const header = Buffer.alloc(5);
  header.write('E', 0, 'ascii');
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}
