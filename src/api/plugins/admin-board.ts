import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import type { HTTPStatus } from '@bull-board/api/typings/app';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../shared/errors/api-error.js';
import type { ImportJobData } from '../../shared/import/import-job.js';
import type { RowRemovalJobData } from '../../shared/import/row-removal-job.js';
import type { FileImportJobData } from '../../shared/import/file-import-queue.js';
import type { Logger } from '../../shared/infra/logger.js';
import { BOARD_PATH } from './admin-paths.js';
import { apiErrors } from '../../shared/errors/api-errors.js';

/**
 * What the board shows of a job's data: who, what and how much, never the rows themselves
 * (up to 2 MB a job). note: the job data holds no secret to begin with; listing the fields
 * keeps it that way on the board whatever is added to the data later.
 */
export function summariseJobData(data: unknown) {
  const job = (typeof data === 'object' && data !== null ? data : {}) as Partial<ImportJobData> & Partial<Pick<RowRemovalJobData, 'action' | 'entryCount'>>;
  // note: an archive or delete names its rows by entries (row-removal-job.ts).
  const rows = typeof job.rowCount === 'number' ? job.rowCount : job.entryCount;
  return {
    accountId: job.accountId,
    kind: job.kind,
    ...(job.action === 'archive' || job.action === 'delete' ? { action: job.action } : {}),
    rows: typeof rows === 'number' ? rows : 0,
    skipped: Array.isArray(job.errors) ? job.errors.length : 0,
    requestId: job.requestId,
  };
}

/** What the board shows of a file import's job's data: the import it writes, whatever else is added later. */
export function summariseFileJobData(data: unknown) {
  const job = (typeof data === 'object' && data !== null ? data : {}) as Partial<FileImportJobData>;
  return { importId: job.importId };
}

/** The queues the board shows. */
export interface BoardQueues {
  imports: Queue;
  fileImports: Queue;
}

/**
 * Bull Board for the import queues at /admin/queues. The caller puts it behind the admin basic
 * auth. note: read-only. An import job has a partner's request waiting on it (and an
 * Idempotency-Key claim pointing at it): retrying, promoting or removing it from the board
 * would race the API's own withdraw-or-wait logic, so the board only looks. A file import's job
 * only drives its import (the record in PostgreSQL decides), and the workers' fallback revives it
 * when needed: the board has nothing to do there either.
 */
export async function registerAdminBoard(app: FastifyInstance, queues: BoardQueues, log: Logger): Promise<void> {
  const imports = new BullMQAdapter(queues.imports, { readOnlyMode: true });
  imports.setFormatter('data', summariseJobData);
  const fileImports = new BullMQAdapter(queues.fileImports, { readOnlyMode: true });
  fileImports.setFormatter('data', summariseFileJobData);
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(BOARD_PATH);
  createBullBoard({ queues: [imports, fileImports], serverAdapter, options: { uiConfig: { boardTitle: 'bulk-import queues' } } });
  // note: the board's routes have their own error handler; this one keeps our error bodies (a
  // refused Origin, say) and never shows an internal message.
  serverAdapter.setErrorHandler((error) => {
    // note: the adapter sends any status; the type lists only those the board itself uses.
    if (error instanceof ApiError) return { status: error.statusCode as HTTPStatus, body: error.body };
    log.error({ err: error }, 'Bull Board request failed');
    return { status: 500, body: apiErrors.internal().body };
  });
  await app.register(serverAdapter.registerPlugin(), { prefix: BOARD_PATH });
}
