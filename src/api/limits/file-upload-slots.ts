import { apiErrors } from '../../shared/errors/api-errors.js';
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';

/**
 * The uploads this API process receives at once (FILE_UPLOADS_PER_PROCESS): what bounds the
 * memory of its uploads together, each being bounded on its own (src/api/import/file-upload.ts).
 * note: per process, not per account: the file-import cap (ACCOUNT_MAX_FILE_IMPORTS) keeps one
 * account to its share across replicas.
 */
export class FileUploadSlots {
  private held = 0;

  constructor(readonly max: number) {}

  get inUse(): number {
    return this.held;
  }

  /** A slot, released once; undefined when every slot is held. */
  tryTake(): (() => void) | undefined {
    if (this.held >= this.max) return undefined;
    this.held += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held -= 1;
    };
  }
}

/**
 * A hook of the upload route, after the load shedding: 503 `overloaded` when the process already
 * receives its number of uploads; otherwise the upload holds a slot until its connection's answer
 * is done.
 */
export function takeUploadSlot(slots: FileUploadSlots): onRequestHookHandler {
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
