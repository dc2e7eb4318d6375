import type { FastifyInstance } from 'fastify';

/**
 * Once the server starts closing, every response still in flight (an import that was awaiting
 * its job, say) asks the client to close the connection. Otherwise a keep-alive connection that
 * turns idle after close() began would hold the process open until its keep-alive timeout.
 */
export function registerGracefulClose(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
}
