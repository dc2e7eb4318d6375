import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ApiError } from '../../shared/errors/api-error.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import { canonicalIp } from '../client-ip.js';
import { LINGER_MS } from './linger-close.js';
import { completionLevel, noteForRequestLog, writeRequestLine } from './request-log.js';

/**
 * Errors the framework raises before a route runs, in the service's own shape: `{error}` and an
 * `X-Request-Id`, never the URL or a framework code (docs/errors.md#framework-errors). Fastify would otherwise answer
 * with its own body, echoing the path.
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const refusal = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? apiErrors.urlTooLong() : error.code === 'FST_ERR_BAD_URL' ? apiErrors.malformedUrl() : apiErrors.badRequest();
  // note: the router answers before any hook, so the request's line is written here.
  noteForRequestLog(request, { code: refusal.body.code, frameworkCode: error.code });
  reply.raw.once('finish', () => writeRequestLine(request, reply));
  void reply.code(refusal.statusCode).header('x-request-id', request.id).header('connection', 'close').send(refusal.body);
}

/** note: the client gets this long to read the reply before the socket is destroyed anyway. */

function clientErrorReply(code: string | undefined): ApiError {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return apiErrors.requestTimeout();
  if (code === 'HPE_HEADER_OVERFLOW') return apiErrors.headersTooLarge();
  return apiErrors.badRequest();
}

/** Writes `refusal` on the socket as a whole HTTP answer and closes the connection; false when the socket can no longer be written. */
function answerOnSocket(socket: Socket, refusal: ApiError, requestId: string): boolean {
  const { statusCode: status, body: reply } = refusal;
  const body = JSON.stringify(reply);
  const writable = socket.writable;
  if (writable) {
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
  return writable;
}

/**
 * Node's HTTP parser refuses a request before Fastify sees it (a bad Content-Length, headers too
 * large, a request that did not arrive within REQUEST_TIMEOUT_MS): answered in the service's
 * shape with a fresh X-Request-Id, then the connection is closed. Fastify calls it bound to the
 * app, whose logger writes the request's line (request-log.ts).
 */
export function clientErrorHandler(this: FastifyInstance | void, error: NodeJS.ErrnoException, socket: Socket): void {
  // note: a reset connection has nobody to answer; a reply already under way cannot be replaced.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const refusal = clientErrorReply(error.code);
  const requestId = randomUUID();
  if (!answerOnSocket(socket, refusal, requestId)) return;
  const { statusCode, body } = refusal;
  // note: nothing of the request is known but its address: Node refused it before Fastify saw it.
  this?.log[completionLevel(statusCode, body.code, undefined)](
    { requestId, statusCode, remoteAddress: canonicalIp(socket.remoteAddress ?? ''), code: body.code, frameworkCode: error.code },
    'request completed',
  );
}

/**
 * A request whose body has not all arrived within its deadline (body-deadline.ts): 408 on its
 * socket as Node answers one past its own deadline, under the request's own id, and the
 * request's one line. note: the reply is written on the socket, not sent through Fastify, which
 * is still waiting for the body.
 */
export function refuseLateBody(request: FastifyRequest, reply: FastifyReply, deadlineMs: number): void {
  const socket = request.raw.socket;
  if (socket.destroyed) return;
  const refusal = apiErrors.requestTimeout();
  if (!answerOnSocket(socket, refusal, request.id)) return;
  noteForRequestLog(request, { code: refusal.body.code, deadlineMs });
  reply.code(refusal.statusCode);
  writeRequestLine(request, reply);
}
