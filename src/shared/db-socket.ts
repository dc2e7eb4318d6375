import net from 'node:net';

interface SocketOptions {
  host: string[];
  port: number[];
  path?: string | false;
}

/**
 * Opens the PostgreSQL socket with TCP_NODELAY. postgres.js leaves Nagle's algorithm on, and a
 * large statement or a COPY then waits on the server's delayed ACK: about 40 ms per batch for
 * COPY, and a few ms on a 200-row insert. Rejects after `timeoutMs` like postgres.js's own
 * connect_timeout would.
 */
export function connectWithNoDelay(timeoutMs: number) {
  return (options: SocketOptions): Promise<net.Socket> =>
    new Promise((resolve, reject) => {
      const socket = options.path
        ? net.connect({ path: options.path })
        : net.connect({ host: options.host[0] ?? '127.0.0.1', port: options.port[0] ?? 5432, noDelay: true });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(Object.assign(new Error('connect timeout'), { code: 'CONNECT_TIMEOUT' }));
      }, timeoutMs);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeListener('error', onError);
        resolve(socket);
      });
      const onError = (error: Error) => {
        clearTimeout(timer);
        reject(error);
      };
      socket.once('error', onError);
    });
}
