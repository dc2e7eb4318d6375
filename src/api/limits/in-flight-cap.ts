import type { onRequestAsyncHookHandler } from 'fastify';
import type { AccountInFlight } from './in-flight-slots.js';
import { apiErrors } from '../../shared/errors/api-errors.js';

/**
 * Step 5b of the checks (docs/access.md#order-of-checks): after the scope, before the body is read, the account
 * takes one of its ACCOUNT_MAX_IN_FLIGHT import slots or gets 429. The request has already been
 * counted against the rate limits. The slot is given back when the import's handler ends, or
 * when the response closes before the handler started (a refusal, a client gone): never while an
 * import the request started may still be running.
 */
export function holdInFlightSlot(inFlight: AccountInFlight): onRequestAsyncHookHandler {
  return async function takeInFlightSlot(request, reply) {
    const slot = await inFlight.tryAcquire(request.apiKey!.account.id);
    if (slot === undefined) throw apiErrors.tooManyConcurrent();
    request.inFlightSlot = slot;
    reply.raw.once('close', () => {
      if (!slot.handlerStarted) slot.release();
    });
  };
}
