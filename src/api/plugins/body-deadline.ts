import type { FastifyInstance, FastifyRequest } from 'fastify';
import { IMPORTS_PATH } from '../../shared/import-location.js';
import { refuseLateBody } from './framework-errors.js';

export interface BodyDeadlines {
  /** REQUEST_TIMEOUT_MS: every request but a file upload */
  requestTimeoutMs: number;
  /** FILE_UPLOAD_TIMEOUT_MS: `POST /v1/api/imports`, whose body is a whole file */
  fileUploadTimeoutMs: number;
}

/** What Node's HTTP server itself must allow: the longer of the two, since it applies one to every request. */
export function serverRequestTimeoutMs(deadlines: BodyDeadlines): number {
  return Math.max(deadlines.requestTimeoutMs, deadlines.fileUploadTimeoutMs);
}

const isFileUpload = (request: FastifyRequest): boolean => request.method === 'POST' && request.routeOptions.url === IMPORTS_PATH;

/**
 * note: a request with neither Content-Length nor Transfer-Encoding has no body (RFC 9112, 6.3),
 * so it arrived whole with its headers, though Node marks it complete only after the hooks ran:
 * a GET needs no timer (one per request was measurable on GET /v1/api/me).
 */
const mayHaveBody = (request: FastifyRequest): boolean => request.headers['content-length'] !== undefined || request.headers['transfer-encoding'] !== undefined;

/**
 * Gives a file upload its own time to arrive. note: Node bounds how long a request may take to
 * arrive with one server-wide setting, so the server gets the longer of the two deadlines and the
 * requests with the shorter one are bounded here: one whose body has not all arrived when its
 * deadline passes (counted from its headers) is answered 408 and its connection closed, as Node
 * answers one past its own deadline (refuseLateBody). A request whose reply has gone needs no
 * deadline: the timer is cleared then.
 */
export function registerBodyDeadline(app: FastifyInstance, deadlines: BodyDeadlines): void {
  const longest = serverRequestTimeoutMs(deadlines);
  app.addHook('onRequest', (request, reply, done) => {
    const deadline = isFileUpload(request) ? deadlines.fileUploadTimeoutMs : deadlines.requestTimeoutMs;
    if (deadline < longest && !request.raw.complete && mayHaveBody(request)) {
      const timer = setTimeout(() => {
        if (!request.raw.complete) refuseLateBody(request, reply, deadline);
      }, deadline);
      timer.unref();
      reply.raw.once('close', () => clearTimeout(timer));
    }
    done();
  });
}
