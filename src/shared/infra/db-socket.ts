import net from 'node:net';
import { Duplex } from 'node:stream';

interface SocketOptions {
  host: string[];
  port: number[];
  path?: string | false;
  target_session_attrs?: string | null;
  ssl?: unknown;
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
      // note: as postgres.js marks the sockets it dials itself: TLS takes the server name to send
      // (SNI) and to check the certificate against (verify-full) from here, and errors name it.
      resolve(Object.assign(socket, { host, port }));
    });
  });
}

/** A connection closed this soon after it was opened was turned away (see connectWithNoDelay). */
const TURNED_AWAY_MS = 2_000;
/** How long a host that turned a connection away is passed over before it is dialled again. */
const PASS_OVER_MS = 500;

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
 *
 * note: a host that turned a connection away is passed over for PASS_OVER_MS. While no host is
 * a primary (the primary died, its standby is not promoted yet), postgres.js would otherwise dial
 * again at once, for ever: every waiting query hung until a primary appeared, and each pooled
 * connection opened some 50 sessions a second on the standby. Passed over, the hosts run out,
 * and the waiting queries fail at once with 08001, as libpq fails when no host fits
 * `target_session_attrs`; the request answers 503 and the next query dials again.
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
  /** per host index, when it last turned a connection away */
  const turnedAwayAt: number[] = [];
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
      if (Date.now() - (turnedAwayAt[index] ?? -Infinity) < PASS_OVER_MS) {
        failures.push(`${host}:${port} (turned away)`);
        continue;
      }
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
      // note: postgres.js ends a connection itself (Terminate, then end()) to turn it away or
      // when the pool closes. A connection the server dropped is ended too, by Node, once the
      // server's side has ended; it, and one that carried a cancel request, leave the host alone.
      let endedHere = false;
      const end = socket.end.bind(socket) as (...args: unknown[]) => net.Socket;
      socket.end = (...args: unknown[]) => {
        if (!socket.readableEnded) endedHere = true;
        return end(...args);
      };
      socket.once('close', () => {
        if (Date.now() - openedAt >= TURNED_AWAY_MS) return;
        if (cursor === index) cursor = (index + 1) % hosts.length;
        if (endedHere) turnedAwayAt[index] = Date.now();
      });
      const refuses = options.target_session_attrs ? REFUSES[options.target_session_attrs] : undefined;
      // note: TLS replaces this socket's listeners, and the first answer is then not a message.
      if (refuses && !options.ssl) {
        onStartup(socket, (parameters) => {
          if (!refuses(parameters)) return;
          endedHere = true;
          socket.destroy();
        });
      }
      return socket;
    }
    throw Object.assign(new Error(`could not connect to PostgreSQL at ${failures.join(', ')}`), {
      code: (lastError as { code?: string } | undefined)?.code,
    });
  };
}

/**
 * What each `target_session_attrs` turns away, from the parameters PostgreSQL 14 and later report
 * at startup (older servers do not, and postgres.js then asks them).
 */
const REFUSES: Record<string, (parameters: Record<string, string>) => boolean> = {
  primary: (p) => p.in_hot_standby === 'on',
  standby: (p) => p.in_hot_standby === 'off',
  'read-write': (p) => p.default_transaction_read_only === 'on',
  'read-only': (p) => p.default_transaction_read_only === 'off',
};

/**
 * Calls `onReady` with the parameters the server reported, at its first ReadyForQuery.
 *
 * note: postgres.js checks `target_session_attrs` there too, but skips the check when it still
 * holds an error from the connection's previous socket (a query the server cut off with a FATAL
 * error: a terminated backend, a shutdown): the connection then settled on a standby, and every
 * write failed there (25006, a 500) until the connection was recycled. This listener comes
 * before postgres.js's, so a wrong server is dropped before a query is written to it; it misses
 * nothing, as the server says nothing before the startup message postgres.js sends once it listens.
 */
function onStartup(socket: net.Socket, onReady: (parameters: Record<string, string>) => void): void {
  let pending: Buffer = Buffer.alloc(0);
  const parameters: Record<string, string> = {};
  const read = (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    // note: each message is a type byte, then its length (itself included) as an int32.
    while (pending.length >= 5) {
      const end = 1 + pending.readInt32BE(1);
      if (pending.length < end) return;
      const type = String.fromCharCode(pending[0]!);
      const body = pending.subarray(5, end);
      pending = pending.subarray(end);
      if (type === 'S') {
        const [name = '', value = ''] = body.toString('utf8').split('\0');
        parameters[name] = value;
      } else if (type === 'Z') {
        socket.off('data', read);
        onReady(parameters);
        return;
      }
    }
  };
  socket.on('data', read);
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
