import type { onRequestAsyncHookHandler } from 'fastify';
import type { AccountInFlight } from './in-flight-slots.js';
import type { ApiMetrics } from '../api-metrics.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import { authenticatedKey } from '../authenticated.js';

/**
 * Step 5b of the checks (docs/access.md#order-of-checks): after the scope, before the body is read, the account
 * takes one of its ACCOUNT_MAX_IN_FLIGHT import slots or gets 429. The request has already been
 * counted against the rate limits. The slot is given back when the import's handler ends (or,
 * after a 504, when its job does), or when the response closes before the handler started (a
 * refusal, a client gone): never while an import the request started may still be running.
 */
export function holdInFlightSlot(inFlight: AccountInFlight, metrics: Pick<ApiMetrics, 'rateLimited'>): onRequestAsyncHookHandler {
  return async function takeInFlightSlot(request, reply) {
    const slot = await inFlight.tryAcquire(authenticatedKey(request).account.id);
    if (slot === undefined) {
      metrics.rateLimited.inc({ window: 'concurrency' });
      throw apiErrors.tooManyConcurrent();
    }
    // note: a client that hung up while its key was checked or its slot taken has already closed
    // the response, whose 'close' will not come again: the slot goes back now, and nothing more
    // is done for a request nobody will read the answer of (not even its body, which may be whole).
    if (reply.raw.destroyed || request.raw.destroyed) {
      slot.release();
      reply.hijack();
      return;
    }
    request.inFlightSlot = slot;
    reply.raw.once('close', () => {
      if (!slot.handlerStarted) slot.release();
    });
  };
}
