import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../shared/errors/api-error.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import { isDependencyUnavailable } from '../../shared/infra/dependency-errors.js';
import { importErrorReply } from '../import/import-error-replies.js';
import { lingerOnClose } from './linger-close.js';
import { noteForRequestLog } from './request-log.js';

const INVALID_JSON_CODES = new Set(['FST_ERR_CTP_INVALID_JSON_BODY', 'FST_ERR_CTP_EMPTY_JSON_BODY']);

function isFastifyError(error: unknown): error is FastifyError {
  return typeof error === 'object' && error !== null && 'statusCode' in error;
}

/** The service's answer to an error the framework raised about the body, if it is one. */
function frameworkBodyError(error: unknown, request: FastifyRequest): ApiError | undefined {
  if (!isFastifyError(error)) return undefined;
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return apiErrors.bodyTooLarge(request.routeOptions.bodyLimit);
  if (INVALID_JSON_CODES.has(error.code) || (error.statusCode === 400 && error instanceof SyntaxError)) return apiErrors.invalidJson();
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return apiErrors.unsupportedMediaType();
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    noteForRequestLog(request, { frameworkCode: error.code });
    return apiErrors.badRequest();
  }
  return undefined;
}

/**
 * The one place errors become responses: an ApiError is sent as it is, an import's domain error
 * as importErrorReply says, the framework's body errors as frameworkBodyError says (all texts
 * from the catalogue, api-errors.ts); anything else is a 500 without internals. note: the cause
 * of a 5xx goes on the request's one completion line (request-log.ts), at error, not on a line of
 * its own.
 */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler(async (error, request, reply) => {
    // note: a refusal sent before the body was read (auth, limits, a body too large) closes the
    // connection, so a client trickling its body cannot hold it open after the answer.
    if (!request.raw.complete) {
      reply.header('connection', 'close');
      lingerOnClose(request.raw.socket);
    }
    const known = error instanceof ApiError ? error : (importErrorReply(error) ?? frameworkBodyError(error, request));
    if (known) {
      return reply.code(known.statusCode).headers(known.headers).send(known.body);
    }
    noteForRequestLog(request, { err: error });
    if (isDependencyUnavailable(error)) {
      const unavailable = apiErrors.serviceUnavailable();
      return reply.code(unavailable.statusCode).headers(unavailable.headers).send(unavailable.body);
    }
    const internal = apiErrors.internal(request.id);
    return reply.code(internal.statusCode).send(internal.body);
  });

  app.setNotFoundHandler(async (_request, reply) => {
    const notFound = apiErrors.notFound();
    return reply.code(notFound.statusCode).send(notFound.body);
  });
}
