/** An attempt whose write did not settle in time; the job is retried (import-processor.ts). */
export class ImportAttemptTimeoutError extends Error {
  override name = 'ImportAttemptTimeoutError';
}

/**
 * The write, or ImportAttemptTimeoutError once `ms` have passed without it settling.
 *
 * Why: a statement can be left unsettled for good when its connection goes in a failover
 * (postgres.js 3.4 strands a query queued on a connection that closes, porsager/postgres#1186,
 * #1195); the job then sat `active` with its lock renewed and its import answered 504 until the
 * partner gave up. Giving the attempt up lets BullMQ retry it on a live connection. Safe for
 * the same reason a stalled job's rerun is: the import's record is written by the same statement
 * as its rows and is unique per job, so whichever of the abandoned statement and the retry comes
 * second finds the record and writes nothing; a job that fails for good is fenced
 * (final-failure.ts) before a late write could land.
 */
export async function settleWithin<T>(write: Promise<T>, ms: number, what: string): Promise<T> {
  // note: the abandoned write may still reject later; its error is moot by then.
  write.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ImportAttemptTimeoutError(`${what} did not settle within ${ms} ms; the attempt is given up and retried`)), ms);
  });
  try {
    return await Promise.race([write, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
