import type { FastifyBaseLogger } from 'fastify';
import { addFileImportJob, type FileImportQueue } from '../../shared/import/file-import-queue.js';
import type { ImportKind } from '../../shared/import/import-kinds.js';

/**
 * Adds a file import's job once its upload has committed. note: a failure (Redis away) is logged,
 * not answered: the import is durable in PostgreSQL and the workers' fallback adds the job it
 * lacks (src/worker/file-import-fallback.ts), so the upload still answers 202.
 */
export async function addJobAfterUpload(queue: FileImportQueue, importId: string, kind: ImportKind, log: FastifyBaseLogger): Promise<void> {
  try {
    await addFileImportJob(queue, importId, kind);
  } catch (error) {
    log.warn({ err: error, jobId: importId }, 'file import job not added; the workers\' fallback adds it');
  }
}
