import { DelayedError, UnrecoverableError, WaitingError, type Job } from 'bullmq';
import type { Counter } from 'prom-client';
import {
  addFileImportHelpers,
  fileImportJobId,
  FileImportJobDataSchema,
  type FileImportJobResult,
  type FileImportQueue,
} from '../shared/import/file-import-queue.js';
import type { Sql } from '../shared/infra/db.js';
import type { Logger } from '../shared/infra/logger.js';
import { findFileImportRecord } from '../shared/repositories/file-import-record.js';
import { writeFileChunk, type ChunkOutcome } from './write-file-chunk.js';

/** How long a file import's job waits, delayed, when its import is being completed or cancelled elsewhere. */
export const BUSY_RETRY_MS = 1_000;

export interface FileImportProcessorSettings {
  /** chunks of one import written at once, each on its own connection (FILE_IMPORT_WRITERS) */
  writers?: number;
  /** counts the rows the chunks create or update (bulk_import_worker_rows_written_total, source `file`) */
  rowsWritten?: Counter<'kind' | 'source'>;
  /** true once the worker is stopping: the job is handed back between two chunks */
  stopping: () => boolean;
  /** helpers' jobs an import's job adds, and the queue it adds them to (FILE_IMPORT_HELPERS) */
  helpers?: { count: number; queue: FileImportQueue };
}

const count = (n: number) => n.toLocaleString('en-US');

/** How one writer of a job stopped: writeFileChunk's last answer other than `written`, or the worker stopping. */
type WriterEnd = Exclude<ChunkOutcome['state'], 'written'> | 'stopping';

/**
 * Writes a file import as its job in the `file-imports` queue, with `writers` chunks at a time:
 * the job only drives. It first adds its helpers' jobs (addFileImportHelpers), which any other
 * worker takes and which write chunks the same way until none is left to take. note:
 * writeFileChunk is the one writer, and PostgreSQL's locks say who writes what; each chunk
 * commits on its own, so a job killed mid-chunk loses its chunks' transactions only, and whoever
 * runs the job next (BullMQ's stalled check, or the fallback) goes on with the chunks left.
 * Progress and one log line per chunk are for Bull Board.
 */
export function createFileImportProcessor(sql: Sql, log: Logger, settings: FileImportProcessorSettings) {
  const writers = settings.writers ?? 1;
  return async (job: Job<unknown, FileImportJobResult>, token?: string): Promise<FileImportJobResult> => {
    const parsed = FileImportJobDataSchema.safeParse(job.data);
    // note: the id is what deduplicates a file import's job; a job whose data names another
    // import would be a second driver of it, so it is refused.
    if (!parsed.success || fileImportJobId(parsed.data.importId, parsed.data.helper) !== job.id) throw new UnrecoverableError('malformed file import job payload');
    const { importId, helper } = parsed.data;
    if (helper === undefined && settings.helpers) {
      // note: the job writes its import without them if they cannot be added.
      await addFileImportHelpers(settings.helpers.queue, importId, job.name, settings.helpers.count).catch((error: unknown) =>
        log.warn({ jobId: importId, err: error }, 'file import helpers not added'),
      );
    }
    let failed = false;

    const writer = async (): Promise<WriterEnd> => {
      for (;;) {
        if (settings.stopping() || failed) return 'stopping';
        const outcome = await writeFileChunk(sql, importId);
        if (outcome.state !== 'written') return outcome.state;
        settings.rowsWritten?.inc({ kind: outcome.kind, source: 'file' }, outcome.changed);
        const record = await findFileImportRecord(sql, importId);
        const progress = { processed: record?.processed ?? 0, total: record?.received ?? 0 };
        await job.updateProgress(progress);
        await job.log(`chunk: ${count(outcome.rows)} rows written (${count(progress.processed)} of ${count(progress.total)})`);
      }
    };
    // note: every writer is let finish its chunk before the job ends, however another one ended:
    // a job must not be settled (and run again elsewhere) while a chunk of it is still under way.
    const settled = await Promise.allSettled(
      Array.from({ length: writers }, () =>
        writer().catch((error: unknown) => {
          failed = true;
          throw error;
        }),
      ),
    );
    const error = settled.find((end): end is PromiseRejectedResult => end.status === 'rejected');
    if (error) throw error.reason;
    const ends = new Set(settled.map((end) => (end as PromiseFulfilledResult<WriterEnd>).value));
    if (helper !== undefined) {
      // note: whatever ended it, the import's own job goes on driving; a helper is not handed back.
      await job.log(`helped: ${[...ends].join(', ')}`);
      return { state: 'helped' };
    }

    if (ends.has('completed') || (ends.has('ended') && (await findFileImportRecord(sql, importId))?.state === 'completed')) {
      // note: the writers' progress reports may land out of order; the last one says it all.
      const record = await findFileImportRecord(sql, importId);
      await job.updateProgress({ processed: record?.processed ?? 0, total: record?.received ?? 0 });
      log.info({ jobId: importId }, 'file import completed');
      await job.log('completed: no row left to write');
      return { state: 'completed' };
    }
    if (ends.has('ended')) {
      await job.log('ended: the import was cancelled or had ended; nothing more written');
      return { state: 'ended' };
    }
    if (ends.has('stopping')) {
      // note: back to wait rather than finished, so that another worker takes it at once and no
      // attempt is spent; the chunks under way have committed by now.
      await job.log('handed back: this worker is stopping');
      await job.moveToWait(token);
      throw new WaitingError();
    }
    // note: busy: a cancel or a completion holds the import (another worker's, a stalled copy of
    // this job, an older worker during a rolling deploy). Delayed, not waited for here: the slot
    // is free meanwhile, the job stays the import's driver and shows as delayed on the board, and
    // the next try finds the import ended or its chunks free.
    await job.log(`busy: the import is being completed or cancelled elsewhere; trying again in ${BUSY_RETRY_MS} ms`);
    await job.moveToDelayed(Date.now() + BUSY_RETRY_MS, token);
    throw new DelayedError();
  };
}
