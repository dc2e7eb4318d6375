import type { Counter } from 'prom-client';
import type { Sql } from '../shared/infra/db.js';
import type { Logger } from '../shared/infra/logger.js';
import { unfinishedFileImports } from '../shared/repositories/import-files.js';
import { FILE_CHUNK_ROWS, writeFileChunk } from './write-file-chunk.js';

/** How long a worker with no file import to write waits before it looks again. */
export const FILE_IMPORTS_POLL_MS = 1_000;

/** File imports a worker looks at each time it looks: the oldest; one another worker writes is passed over. */
const CANDIDATES = 10;

export interface FileImportsSettings {
  pollMs?: number;
  chunkRows?: number;
  /** counts the rows the chunks create or update (bulk_import_worker_rows_written_total, source `file`) */
  rowsWritten?: Counter<'kind' | 'source'>;
}

export interface FileImports {
  /** lets the chunk under way commit, then stops */
  stop(): Promise<void>;
}

/**
 * Writes the file imports recorded in PostgreSQL, a chunk at a time (writeFileChunk), in every
 * worker process. note: one chunk at a time per process, on a loop of its own beside the BullMQ
 * worker: a file import takes one database connection and never a bulk request's job slot, so
 * bulk requests are not held up behind a million rows. Workers share the work through the
 * import's record (its lock passes a busy import over); a worker that dies mid-chunk rolls that
 * chunk back, and the next worker to look goes on from the first unwritten row. The queue plays no
 * part: PostgreSQL holds the file, its progress and its state.
 */
export function startFileImports(sql: Sql, log: Logger, settings: FileImportsSettings = {}): FileImports {
  const pollMs = settings.pollMs ?? FILE_IMPORTS_POLL_MS;
  const chunkRows = settings.chunkRows ?? FILE_CHUNK_ROWS;
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

  /** Writes chunks of one import until it ends, is busy elsewhere, or the worker stops; whether it wrote any. */
  async function writeChunksOf(jobId: string): Promise<boolean> {
    let wrote = false;
    while (!stopping) {
      const outcome = await writeFileChunk(sql, jobId, chunkRows);
      if (outcome.state === 'completed') log.info({ jobId }, 'file import completed');
      if (outcome.state !== 'written') return wrote;
      settings.rowsWritten?.inc({ kind: outcome.kind, source: 'file' }, outcome.changed);
      wrote = true;
      // note: a turn of the event loop between chunks, for the BullMQ worker's lock renewals.
      await new Promise((resolve) => setImmediate(resolve));
    }
    return wrote;
  }

  const loop = (async () => {
    while (!stopping) {
      let wrote = false;
      try {
        for (const jobId of await unfinishedFileImports(sql, CANDIDATES)) {
          if (stopping) break;
          if (await writeChunksOf(jobId)) wrote = true;
        }
      } catch (err) {
        log.warn({ err }, 'could not write file imports; trying again');
      }
      if (!wrote && !stopping) await pause(pollMs);
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
