/** A watched import had not ended by the deadline; it goes on, and `lastState` is how it was last read. */
export class WatchDeadlineError extends Error {
  override readonly name = 'WatchDeadlineError';

  constructor(
    readonly importId: string,
    readonly lastState: string,
  ) {
    super(`import ${importId} had not ended by the deadline (last read: ${lastState})`);
  }
}
