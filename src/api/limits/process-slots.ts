/**
 * Slots of something this API process does only so many of at once, whatever the account: the
 * uploads it receives (FILE_UPLOADS_PER_PROCESS), what bounds their memory together, each being
 * bounded on its own (src/api/import/file-upload.ts); the exports it streams (EXPORT_POOL_MAX),
 * each holding a connection of the exports' pool for as long as it runs. note: per process, not
 * per account: the account caps (ACCOUNT_MAX_FILE_IMPORTS, one export at a time) keep one account
 * to its share across replicas.
 */
export class ProcessSlots {
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
