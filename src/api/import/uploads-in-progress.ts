import type { Sql } from '../../shared/infra/db.js';
import type { Logger } from '../../shared/infra/logger.js';
import { touchUploads, UPLOAD_HEARTBEAT_MS } from '../../shared/repositories/file-uploads.js';

/**
 * The uploads this API process is receiving, said to be alive in PostgreSQL every
 * UPLOAD_HEARTBEAT_MS (one statement for all of them): an upload whose process died stops being
 * heard of, and the workers' sweep deletes it with what it staged (file-uploads.ts). note: the
 * heartbeat runs on the uploads' own pool, and a failed one is only logged: a process whose
 * uploads miss several in a row lets them be swept, which ends them at their acceptance.
 */
export class UploadsInProgress {
  private readonly ids = new Set<string>();
  private readonly timer: NodeJS.Timeout;
  private beating: Promise<void> = Promise.resolve();

  constructor(
    private readonly sql: Sql,
    private readonly log: Logger,
    intervalMs = UPLOAD_HEARTBEAT_MS,
  ) {
    this.timer = setInterval(() => {
      if (this.ids.size === 0) return;
      this.beating = touchUploads(this.sql, [...this.ids]).catch((err: unknown) => this.log.warn({ err, uploads: this.ids.size }, 'uploads in progress not touched'));
    }, intervalMs);
    this.timer.unref();
  }

  add(importId: string): void {
    this.ids.add(importId);
  }

  delete(importId: string): void {
    this.ids.delete(importId);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.beating;
  }
}
