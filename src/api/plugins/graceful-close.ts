import type { FastifyInstance } from 'fastify';
import { apiErrors } from '../../shared/errors/api-errors.js';
import { lingerOnClose } from './linger-close.js';
import { noteForRequestLog } from './request-log.js';

/**
 * What the API does while it closes (docs/endpoints.md#shutdown):
 *
 * - A request that arrives once closing began (a new connection accepted before the listener
 *   stopped, a request sent on a connection that was mid-request, a pipelined one) is answered
 *   503 `service_unavailable` from the catalogue, with Retry-After and `Connection: close`,
 *   before anything else about it is checked or its body read: nothing was written, and another
 *   replica can take it. `/v1/health` answers the same 503, so a load balancer drains the
 *   process. note: Fastify's own 503 on closing is turned off (`return503OnClosing: false`,
 *   app.ts): its body has no `code`.
 * - Every response still in flight (an import that was awaiting its job, say) asks the client to
 *   close the connection. Otherwise a keep-alive connection that turns idle after close() began
 *   would hold the process open until its keep-alive timeout.
 *
 * note: closing is noted in preClose, which Fastify runs as close() begins, before the listener
 * stops accepting connections; requests already past their onRequest hooks by then finish.
 */
export function registerGracefulClose(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onRequest', (request, reply, done) => {
    if (!closing) {
      done();
      return;
    }
    // note: as the error handler closes a refusal sent before the body was read, without losing
    // the answer (linger-close.ts).
    if (!request.raw.complete) lingerOnClose(request.raw.socket);
    const unavailable = apiErrors.serviceUnavailable();
    // note: a refusal the stop itself causes, logged as what it is rather than as a failure
    noteForRequestLog(request, { shuttingDown: true });
    // note: serialized as it is, not by the route's response schema: the 503 of `/v1/health`
    // documents the health body, which would turn this one into a 500.
    reply
      .code(unavailable.statusCode)
      .headers(unavailable.headers)
      .type('application/json; charset=utf-8')
      .serializer(JSON.stringify)
      .send(unavailable.body);
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
}
