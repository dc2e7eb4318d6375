import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Import } from './api-types.js';
import type { RowKind } from './attempt-client.js';
import { expectAnswer, type ClientCore } from './client-core.js';
import type { FileImportOptions } from './file-import-query.js';

export interface FileImport extends FileImportOptions {
  kind: RowKind;
  contentType: 'text/csv' | 'application/x-ndjson';
  /**
   * The file, streamed as it is read, never held whole. A function that opens it afresh lets the
   * upload be retried; a Readable alone is sent once (a stream read halfway cannot be sent again).
   */
  body: Readable | (() => Readable);
  /** default a fresh UUID, reused on every retry */
  idempotencyKey?: string;
}

/** The 202 of a file import: the import it became (watch it with watchImport), where it is, and replay. */
export interface FileAccepted {
  import: Import;
  location: string;
  replayed: boolean;
  idempotencyKey: string;
}

/** POST /v1/api/imports?kind=...: the whole file in one request; its rows are written in the background. */
export async function importFile(core: ClientCore, file: FileImport): Promise<FileAccepted> {
  const key = file.idempotencyKey ?? randomUUID();
  const { body } = file;
  const open = typeof body === 'function' ? body : () => body;
  const retry = typeof body === 'function' ? core.retry : { ...core.retry, maxAttempts: 1 };
  const options: FileImportOptions = { ...(file.update ? { update: file.update } : {}), ...(file.mirror ? { mirror: file.mirror } : {}) };
  const answer = await expectAnswer<{ import: Import }>(
    { ...core, retry },
    () => core.attempts.postFile(file.kind, file.contentType, open(), key, options),
    { idempotent: true },
    [202],
    'POST /v1/api/imports',
  );
  const found = answer.body.import;
  return {
    import: found,
    location: answer.headers.get('location') ?? `/v1/api/imports/${encodeURIComponent(found.id)}`,
    replayed: answer.headers.get('idempotent-replayed') === 'true',
    idempotencyKey: key,
  };
}
