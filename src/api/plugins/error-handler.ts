import type { FastifyError, FastifyInstance } from 'fastify';
import { ApiError, serviceUnavailable } from '../../shared/api-error.js';
import { isDependencyUnavailable } from '../../shared/dependency-errors.js';
import { importErrorReply } from '../import/import-error-replies.js';

const INVALID_JSON_CODES = new Set(['FST_ERR_CTP_INVALID_JSON_BODY', 'FST_ERR_CTP_EMPTY_JSON_BODY']);

function isFastifyError(error: unknown): error is FastifyError {
  return typeof error === 'object' && error !== null && 'statusCode' in error;
}

/**
 * The one place errors become responses: ApiError carries its spec body, an import's domain
 * errors get theirs from importErrorReply; the framework's body
 * errors get the texts of decisions A; anything else is a logged 500 without internals.
 */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler(async (error, request, reply) => {
    // note: a refusal sent before the body was read (auth, limits, a body too large) closes the
    // connection, so a client trickling its body cannot hold it open after the answer.
    if (!request.raw.complete) reply.header('connection', 'close');
    const known = error instanceof ApiError ? error : importErrorReply(error);
    if (known) {
      return reply.code(known.statusCode).headers(known.headers).send(known.body);
    }
    if (isFastifyError(error)) {
      if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
        return reply.code(413).send({ error: 'Request body too large', limit_bytes: request.routeOptions.bodyLimit });
      }
      if (INVALID_JSON_CODES.has(error.code) || (error.statusCode === 400 && error instanceof SyntaxError)) {
        return reply.code(400).send({ error: 'Invalid JSON body' });
      }
      if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
        return reply.code(415).send({ error: 'Content-Type must be application/json' });
      }
      if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
        request.log.info({ code: error.code }, 'client error from the framework');
        return reply.code(error.statusCode).send({ error: 'Bad request' });
      }
    }
    if (isDependencyUnavailable(error)) {
      request.log.warn({ err: error }, 'a dependency is unavailable');
      const unavailable = serviceUnavailable();
      return reply.code(unavailable.statusCode).headers(unavailable.headers).send(unavailable.body);
    }
    request.log.error({ err: error }, 'unhandled error');
    return reply.code(500).send({ error: 'Internal server error', request_id: request.id });
  });

  app.setNotFoundHandler(async (_request, reply) => reply.code(404).send({ error: 'Not found' }));
}
