import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { ApiError } from '../../shared/errors/api-error.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import { LINGER_MS } from './linger-close.js';

/**
 * Errors the framework raises before a route runs, in the service's own shape: `{error}` and an
 * `X-Request-Id`, never the URL or a framework code (docs/errors.md#framework-errors). Fastify would otherwise answer
 * with its own body, echoing the path.
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const refusal = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? apiErrors.urlTooLong() : error.code === 'FST_ERR_BAD_URL' ? apiErrors.malformedUrl() : apiErrors.badRequest();
  request.log.info({ code: error.code }, 'request refused by the router');
  void reply.code(refusal.statusCode).header('x-request-id', request.id).header('connection', 'close').send(refusal.body);
}

/** note: the client gets this long to read the reply before the socket is destroyed anyway. */

function clientErrorReply(code: string | undefined): ApiError {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return apiErrors.requestTimeout();
  if (code === 'HPE_HEADER_OVERFLOW') return apiErrors.headersTooLarge();
  return apiErrors.badRequest();
}

/**
 * Node's HTTP parser refuses a request before Fastify sees it (a bad Content-Length, headers too
 * large, a request that did not arrive within REQUEST_TIMEOUT_MS): answered in the service's
 * shape with a fresh X-Request-Id, then the connection is closed.
 */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket): void {
  // note: a reset connection has nobody to answer; a reply already under way cannot be replaced.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const { statusCode: status, body: reply } = clientErrorReply(error.code);
  const body = JSON.stringify(reply);
  if (socket.writable) {
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${randomUUID()}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
}
