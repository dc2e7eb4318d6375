import type { Sql } from '../../src/shared/infra/db.js';
import { writeFileChunk, type ChunkOutcome } from '../../src/worker/write-file-chunk.js';

/** A gate for a write's `beforeCommit` hook: the write stops there, its rows in but uncommitted, until `release`. */
export interface CommitGate {
  /** the hook to hand to the write */
  beforeCommit: () => Promise<void>;
  /** resolves once the write reached its commit */
  reached: Promise<void>;
  /**
   * Lets the write commit; with an error, the hook throws it and the transaction rolls back.
   * note: only the first call counts, so a `finally` can call it again safely.
   */
  release: (error?: Error) => void;
}

export function commitGate(): CommitGate {
  let reach!: () => void;
  const reached = new Promise<void>((resolve) => (reach = resolve));
  let release!: (error?: Error) => void;
  const released = new Promise<Error | undefined>((resolve) => (release = resolve));
  return {
    beforeCommit: async () => {
      reach();
      const error = await released;
      if (error) throw error;
    },
    reached,
    release,
  };
}

/** A chunk of a file import held inside its transaction (holdChunkInTransaction). */
export interface HeldChunk {
  /**
   * Resolves once the chunk has written its rows and counted them, uncommitted, holding the
   * import's record locked; rejects when the chunk ended without reaching its commit (the import
   * was busy, ended, or nothing was left to write), instead of waiting for the test's timeout.
   */
  started: Promise<void>;
  /** lets the chunk commit (with an error: roll it back); only the first call counts */
  release: (error?: Error) => void;
  /** the chunk's outcome once it committed */
  done: Promise<ChunkOutcome>;
}

/**
 * The next chunk of file import `importId` (writeFileChunk), stopped just before its commit until
 * `release()`: what a worker looks like to the rest of the system while it writes a chunk.
 */
export function holdChunkInTransaction(sql: Sql, importId: string): HeldChunk {
  const gate = commitGate();
  const done = writeFileChunk(sql, importId, { beforeCommit: gate.beforeCommit });
  const endedFirst = done.then((outcome) => {
    throw new Error(`the chunk of ${importId} ended without reaching its commit: ${JSON.stringify(outcome)}`);
  });
  // note: a chunk that is held never settles `endedFirst`; one that is not makes `started` reject.
  const started = Promise.race([gate.reached, endedFirst]);
  // note: a test that reads only `done` (a chunk expected busy, say) is not failed by `started`.
  started.catch(() => undefined);
  return { started, release: gate.release, done };
}
