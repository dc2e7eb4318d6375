import type { Socket } from 'node:net';

/** How long a refused request's connection keeps reading (and discarding) its body after the answer. */
export const LINGER_MS = 1_000;

/**
 * Closes the connection of a request answered before its body was read, without losing the
 * answer. note: Node's HTTP server ends a `Connection: close` response with `socket.destroySoon()`,
 * which destroys the socket as soon as the answer is flushed; a client still sending its body
 * then meets unread data on a closed socket, the kernel resets the connection, and the client
 * loses the answer it had not read yet (EPIPE instead of a 429). Here the server half-closes
 * instead, keeps reading and discarding the body (Node dumps an unread request), and destroys
 * the socket after LINGER_MS, so a trickling client still cannot hold it.
 */
export function lingerOnClose(socket: Socket): void {
  socket.destroySoon = function lingeringDestroySoon(this: Socket) {
    if (this.writable) this.end();
    setTimeout(() => this.destroy(), LINGER_MS).unref();
  };
}
