import { apiErrors } from '../../shared/errors/api-errors.js';
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { ProcessSlots } from './process-slots.js';

/**
 * A hook of the upload route, after the load shedding: 503 `overloaded` when the process already
 * receives its number of uploads; otherwise the upload holds a slot until its connection's answer
 * is done.
 */
export function takeUploadSlot(slots: ProcessSlots): onRequestHookHandler {
  return function takeUploadSlot(request: FastifyRequest, reply: FastifyReply, done) {
    const release = slots.tryTake();
    if (release === undefined) {
      request.log.info({ uploads: slots.inUse }, 'file upload shed: the process receives its number of uploads');
      done(apiErrors.overloaded());
      return;
    }
    reply.raw.once('close', release);
    done();
  };
}
