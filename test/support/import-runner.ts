import { randomUUID } from 'node:crypto';
import { ImportRunner, type ImportTimeouts } from '../../src/api/import/import-runner.js';
import type { ImportReplies } from '../../src/api/import/import-reply-listener.js';
import type { NewImport } from '../../src/shared/import/import-queue.js';
import { RowsHandOver } from '../../src/shared/import/rows-hand-over.js';
import { ImportRowsStore } from '../../src/shared/import/rows-store.js';
import type { TestService } from './test-service.js';

/** A runner on the service's queue, rows and log; without `replies` its poll alone ends each wait. */
export function importRunnerOf(service: TestService, timeouts: ImportTimeouts, replies?: ImportReplies): ImportRunner {
  const rowsStore = new ImportRowsStore(service.deps.redis, service.config.redisPrefix);
  return new ImportRunner(service.deps.sql, service.deps.queue, rowsStore, timeouts, service.deps.log, replies);
}

/** A bulk request's import of `rowCount` valid listings (`rows` as encodeImportRows wrote them), none refused. */
export function listingsImport(accountId: string, rows: string, rowCount: number): NewImport {
  return { kind: 'listings', accountId, requestId: randomUUID(), total: rowCount, errors: [], rowCount, rows: new RowsHandOver(rows) };
}
