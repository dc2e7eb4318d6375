/**
 * Why a worker's write of an import failed for good: the worker fails the job at once (a retry
 * would meet the same), and each wrote nothing (its transaction rolled back).
 */

/** The import's account no longer exists. */
export class AccountGoneError extends Error {
  override name = 'AccountGoneError';
}

/** The rows a job carried are not the count its envelope announced (a forged or corrupted job). */
export class ImportRowCountError extends Error {
  override name = 'ImportRowCountError';
}

/** The rows of an import were refused by `COPY` (malformed: a forged or corrupted job). */
export class ImportRowsRefusedError extends Error {
  override name = 'ImportRowsRefusedError';
}

/** The rows of an import that is not recorded yet are gone (withdrawn or expired). */
export class ImportRowsGoneError extends Error {
  override name = 'ImportRowsGoneError';
}

/** The import was answered "nothing was written" (its record says failed): it must write nothing. */
export class ImportAbandonedError extends Error {
  override name = 'ImportAbandonedError';
}

/**
 * A merge met a row another import created meanwhile with an id it would have created: it rolled
 * back and wrote nothing. note: unlike the errors above, not for good: the job's next attempt
 * finds that row and merges into it.
 */
export class MergeRaceError extends Error {
  override name = 'MergeRaceError';
}

/**
 * Rolls a merge back (MergeRaceError) when some of its whole rows met a row another import
 * created meanwhile with the id it would have created (`raced`); the next attempt merges them.
 * note: the one rule for a bulk merge and a file's merge chunk alike, and for an upsert asked for
 * its rows' ids (`?return=rows`) that left unchanged a row created after its statement began,
 * whose id its snapshot cannot tell (repositories/imports.ts rowOutcomeSteps).
 */
export function refuseMergeRace(importId: string, raced: number): void {
  if (raced > 0) throw new MergeRaceError(`import ${importId}: ${raced} rows were created by another import meanwhile`);
}
