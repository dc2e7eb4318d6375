import { Transform } from 'node:stream';

export class ExportIdleError extends Error {
  override name = 'ExportIdleError';
}

/**
 * The last stream before the answer: every chunk that passes it is the client reading (the
 * socket took the one before). note: when the client reads nothing the socket's buffer fills, the
 * answer stops taking chunks, and none passes here; nor does one when the database sends nothing.
 * After `idleMs` of neither it destroys itself with ExportIdleError, which ends the whole export.
 */
export function idleWatchdog(idleMs: number): Transform {
  let timer: NodeJS.Timeout | undefined;
  const watchdog = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      arm();
      done(null, chunk);
    },
  });
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => watchdog.destroy(new ExportIdleError(`the client read nothing for ${idleMs} ms`)), idleMs);
    timer.unref();
  };
  watchdog.once('close', () => clearTimeout(timer));
  arm();
  return watchdog;
}
