import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { apiErrors } from '../../shared/errors/api-errors.js';

/**
 * `Expect: 100-continue` (docs/access.md#order-of-checks): a request that asks for it gets its
 * refusal (lockout, key, tier, quota, scope, in-flight cap, load shedding, an unknown query
 * parameter, a declared Content-Length over the route's limit) instead of `100 Continue`, so a
 * client that waits for it (curl does above 1 MB) does not upload a body only to be refused.
 *
 * note: Node answers `100 Continue` as soon as the headers arrive, before any of the checks,
 * unless the server has a `checkContinue` listener; this one hands the request to Fastify as any
 * other, and the 100 is written from a preParsing hook, which runs after every onRequest hook
 * (the checks) and just before the body is read. A refused request that never got it is answered
 * with `Connection: close` (Node's rule, and the error handler's for an unread body).
 */
export function registerExpectContinue(app: FastifyInstance): void {
  const awaitingContinue = new WeakSet<IncomingMessage>();
  app.server.on('checkContinue', (req: IncomingMessage, res) => {
    awaitingContinue.add(req);
    app.server.emit('request', req, res);
  });
  app.addHook('preParsing', (request, reply, payload, done) => {
    if (!awaitingContinue.delete(request.raw)) {
      done(null, payload);
      return;
    }
    // note: the framework would refuse it too, but only once it starts reading the body, after the 100.
    const limit = request.routeOptions.bodyLimit;
    if (limit !== undefined && Number(request.headers['content-length']) > limit) {
      done(apiErrors.bodyTooLarge(limit));
      return;
    }
    reply.raw.writeContinue();
    done(null, payload);
  });
}
