import { addFileImportJob, type FileImportQueue } from '../shared/import/file-import-queue.js';
import type { Sql } from '../shared/infra/db.js';
import type { Logger } from '../shared/infra/logger.js';
import { findFileImportRecord } from '../shared/repositories/file-import-record.js';
import { unfinishedFileImports } from '../shared/repositories/import-files.js';

/** How long the fallback waits between two looks at the file imports still queued or running. */
export const FILE_IMPORTS_POLL_MS = 5_000;

/** File imports the fallback looks at each time: the oldest. */
const CANDIDATES = 100;

export interface FileImportFallback {
  stop(): Promise<void>;
}

const isUnfinished = (state: string | undefined) => state === 'queued' || state === 'running';

/**
 * Gives every file import still queued or running a live job, so that an import is written even
 * when its job was never added (the API died between its commit and its add, or Redis was away)
 * and Bull Board shows it. It writes nothing itself: the job does (file-import-processor.ts).
 *
 * note: a job that finished (completed, or failed with its attempts spent) while its import is
 * still unfinished is retried, not added: an add with the id of a job that exists is ignored. The
 * job's state is read before the record's, so an import still unfinished after its job finished
 * is one no job is writing; an import that ended meanwhile is left alone.
 */
export function startFileImportFallback(sql: Sql, queue: FileImportQueue, log: Logger, pollMs = FILE_IMPORTS_POLL_MS): FileImportFallback {
  let stopping = false;
  let wake: (() => void) | undefined;
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer.unref();
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  async function ensureJob(importId: string): Promise<void> {
    const job = await queue.getJob(importId);
    const state = job === undefined ? 'unknown' : await job.getState();
    if (state !== 'unknown' && state !== 'completed' && state !== 'failed') return;
    const record = await findFileImportRecord(sql, importId);
    if (record === undefined || !isUnfinished(record.state)) return;
    if (job === undefined || state === 'unknown') {
      await addFileImportJob(queue, importId, record.kind);
      log.info({ jobId: importId }, 'file import had no job: added');
    } else {
      await job.retry(state, { resetAttemptsMade: true, resetAttemptsStarted: true });
      log.info({ jobId: importId, was: state }, 'file import unfinished after its job ended: job retried');
    }
  }

  const loop = (async () => {
    while (!stopping) {
      try {
        for (const importId of await unfinishedFileImports(sql, CANDIDATES)) {
          if (stopping) break;
          // note: one import's trouble (two workers retrying one job at once: the second is
          // refused) does not keep the others from being looked at.
          await ensureJob(importId).catch((err: unknown) => log.warn({ err, jobId: importId }, 'could not check a file import\'s job; trying again'));
        }
      } catch (err) {
        log.warn({ err }, 'could not read the file imports still queued or running; trying again');
      }
      if (!stopping) await pause(pollMs);
    }
  })();

  return {
    async stop() {
      stopping = true;
      wake?.();
      await loop;
    },
  };
}
