import { DelayedError, UnrecoverableError, WaitingError, type Job } from 'bullmq';
import type { Counter } from 'prom-client';
import { FileImportJobDataSchema, type FileImportJobResult } from '../shared/import/file-import-queue.js';
import type { Sql } from '../shared/infra/db.js';
import type { Logger } from '../shared/infra/logger.js';
import { findFileImportRecord } from '../shared/repositories/file-import-record.js';
import { writeFileChunk } from './write-file-chunk.js';

/** How long a file import's job waits, delayed, when another worker holds its import's record. */
export const BUSY_RETRY_MS = 1_000;

export interface FileImportProcessorSettings {
  /** counts the rows the chunks create or update (bulk_import_worker_rows_written_total, source `file`) */
  rowsWritten?: Counter<'kind' | 'source'>;
  /** true once the worker is stopping: the job is handed back between two chunks */
  stopping: () => boolean;
}

const count = (n: number) => n.toLocaleString('en-US');

/**
 * Writes a file import, chunk after chunk, as its job in the `file-imports` queue: the job only
 * drives. note: writeFileChunk is the one writer and the import's record lock in PostgreSQL says
 * who writes; each chunk commits on its own, so a job killed mid-chunk loses that chunk's
 * transaction only, and whoever runs the job next (BullMQ's stalled check, or the fallback) goes on
 * from the first unwritten row. Progress and one log line per chunk are for Bull Board.
 */
export function createFileImportProcessor(sql: Sql, log: Logger, settings: FileImportProcessorSettings) {
  return async (job: Job<unknown, FileImportJobResult>, token?: string): Promise<FileImportJobResult> => {
    const parsed = FileImportJobDataSchema.safeParse(job.data);
    // note: the id is what deduplicates a file import's job; a job whose data names another
    // import would be a second driver of it, so it is refused.
    if (!parsed.success || parsed.data.importId !== job.id) throw new UnrecoverableError('malformed file import job payload');
    const { importId } = parsed.data;
    for (;;) {
      if (settings.stopping()) {
        // note: back to wait rather than finished, so that another worker takes it at once
        // and no attempt is spent; the chunk under way has committed by now.
        await job.log('handed back: this worker is stopping');
        await job.moveToWait(token);
        throw new WaitingError();
      }
      const outcome = await writeFileChunk(sql, importId);
      switch (outcome.state) {
        case 'written': {
          settings.rowsWritten?.inc({ kind: outcome.kind, source: 'file' }, outcome.changed);
          const record = await findFileImportRecord(sql, importId);
          const progress = { processed: record?.processed ?? 0, total: record?.received ?? 0 };
          await job.updateProgress(progress);
          await job.log(`chunk: ${count(outcome.rows)} rows written (${count(progress.processed)} of ${count(progress.total)})`);
          break;
        }
        case 'completed':
          log.info({ jobId: importId }, 'file import completed');
          await job.log('completed: no row left to write');
          return { state: 'completed' };
        case 'ended':
          await job.log('ended: the import was cancelled or had ended; nothing written');
          return { state: 'ended' };
        case 'busy':
          // note: another driver holds the record (a stalled copy of this job still running, an
          // older worker's loop during a rolling deploy, or a cancel under way). Delayed, not
          // waited for here: the slot is free meanwhile, the job stays the import's driver and
          // shows as delayed on the board, and each wait is bounded. Whoever holds the record
          // either ends the import (the next try finds it ended) or lets it go.
          await job.log(`busy: another worker holds the import; trying again in ${BUSY_RETRY_MS} ms`);
          await job.moveToDelayed(Date.now() + BUSY_RETRY_MS, token);
          throw new DelayedError();
      }
    }
  };
}
