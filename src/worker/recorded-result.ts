import type { AnyImportResult } from '../shared/import/row-removal-job.js';
import type { ImportRecord } from '../shared/repositories/import-records.js';
import { ImportAbandonedError } from './write-errors.js';

/**
 * The result of an import a run of its job recorded before (it died before its acknowledgement,
 * and this is the rerun): what that run wrote, answered again and never written twice. An import
 * answered "nothing was written" must write nothing (ImportAbandonedError). note: the one rule
 * for upserts and for archives and deletes alike.
 */
export function recordedResult(importId: string, previous: ImportRecord | undefined): AnyImportResult {
  if (!previous) throw new Error(`import ${importId} is recorded but its result cannot be read`);
  if (previous.state === 'failed') throw new ImportAbandonedError(`import ${importId} was answered "nothing was written"; it writes nothing`);
  if (previous.state === 'running') throw new Error(`import ${importId} is recorded as an import not ended, not a bulk request's`);
  return previous.result;
}
