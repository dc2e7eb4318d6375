/** The run cannot go on: bad key or tier, or the server stayed unreachable. Exit status 2. */
export class FatalError extends Error {
  constructor(
    message: string,
    /** what became of the batch in hand: never sent, or possibly written */
    readonly batchState: 'not-written' | 'unknown',
  ) {
    super(message);
  }
}
