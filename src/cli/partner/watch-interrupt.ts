import type { CliIo } from './cli-io.js';

/** Ctrl-C during a run, as the run sees it. */
export interface InterruptWatch {
  /** true once Ctrl-C was pressed: read no further, settle what is in flight */
  readonly interrupted: () => boolean;
  /** stops listening; called however the run ended */
  readonly stop: () => void;
}

/**
 * Listens for Ctrl-C for the length of a run. note: a first Ctrl-C lets the batch or upload in
 * flight finish, so its outcome is known and reported (`notice` says so on stderr); a second quits
 * at once with exit status 2.
 */
export function watchInterrupt(io: CliIo, notice: string): InterruptWatch {
  let interrupted = false;
  const onInterrupt = () => {
    if (interrupted) process.exit(2);
    interrupted = true;
    io.stderr.write(notice);
  };
  process.on('SIGINT', onInterrupt);
  return { interrupted: () => interrupted, stop: () => process.off('SIGINT', onInterrupt) };
}
