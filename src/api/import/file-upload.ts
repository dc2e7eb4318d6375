import { createHash, type Hash } from 'node:crypto';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ApiError } from '../../shared/errors/api-error.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import { IMPORT_KINDS, type ImportKind } from '../../shared/import/import-kinds.js';
import { FileReadError } from '../../shared/import/file/file-read-error.js';
import { readCsvRows } from '../../shared/import/file/read-csv.js';
import { readNdjsonRows } from '../../shared/import/file/read-ndjson.js';
import { rowFields } from '../../shared/import/file/row-fields.js';
import type { SourceRow } from '../../shared/import/file/source-row.js';
import type { TransactionSql } from '../../shared/infra/db.js';
import { recordFileRowErrors, stageFileRows } from '../../shared/repositories/import-files.js';
import type { RowError } from '../../shared/rows/row-errors.js';
import { validateRows } from '../../shared/rows/validate-rows.js';

/** Rows a file may hold (docs/imports.md#whole-files). */
export const FILE_MAX_ROWS = 1_000_000;

/**
 * Rows checked and staged at a time: what the upload holds in memory besides the stream's buffers,
 * and the most a worker's chunk writes (the batch's valid rows are staged as one chunk). note: a
 * thousand rows make a chunk of tens of milliseconds, which a cancel waits for and which leaves the
 * database to bulk requests between two chunks; chunks of 5,000 and 10,000 rows wrote no faster.
 */
export const FILE_CHUNK_ROWS = 1_000;

/** Failed rows a `no valid rows` answer lists; the rest are not kept (nothing is). */
const REFUSAL_ERRORS = 100;

export type FileFormat = 'ndjson' | 'csv';

/** A file refused as a whole while it was read: nothing of it is kept. */
export class FileRefusedError extends Error {
  override name = 'FileRefusedError';
  constructor(readonly reply: ApiError) {
    super(reply.body.error);
  }
}

/** What the upload read and staged. */
export interface ReceivedFile {
  /** rows in the file, valid or not */
  received: number;
  staged: number;
  failed: number;
  /** sha256 of the endpoint, the kind and the file's bytes: what an Idempotency-Key compares */
  hash: Buffer;
}

/** Counts the bytes and hashes them as they pass; refuses the file past `maxBytes` (413). */
class MeteredBytes extends Transform {
  bytes = 0;
  constructor(
    private readonly maxBytes: number,
    private readonly hash: Hash,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      done(new FileRefusedError(apiErrors.bodyTooLarge(this.maxBytes)));
      return;
    }
    this.hash.update(chunk);
    done(null, chunk);
  }
}

/** Decodes strict UTF-8 (a malformed byte refuses the file: 400), as text for the readers. */
class StrictUtf8 extends Transform {
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });
  constructor() {
    super({ readableObjectMode: false, decodeStrings: true });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    try {
      done(null, this.decoder.decode(chunk, { stream: true }));
    } catch {
      done(new FileRefusedError(apiErrors.fileNotUtf8()));
    }
  }

  override _flush(done: TransformCallback): void {
    try {
      done(null, this.decoder.decode());
    } catch {
      done(new FileRefusedError(apiErrors.fileNotUtf8()));
    }
  }
}

/** A row the reader could not even read (a line that is not JSON): failed, as a row that is not an object. */
function unreadable(index: number, problem: string): RowError {
  return { index, reason: problem, details: [{ field: null, code: 'not_an_object', message: problem }] };
}

const repeated = (index: number, externalId: unknown): RowError => ({
  index,
  ...(typeof externalId === 'string' ? { external_id: externalId } : {}),
  reason: 'external_id: appears more than once in this file',
  details: [{ field: 'external_id', code: 'duplicate_external_id', message: 'appears more than once in this file' }],
});

/**
 * Reads a whole file as it arrives and stages it in the import's transaction (`tx`, whose record
 * `jobId` is inserted): every row checked with the bulk endpoints' rules, reasons and codes,
 * `index` its position in the file (from 0), the valid rows staged (a later row repeating an
 * `external_id` fails), the failed ones kept. Never holds the file whole: a batch of rows at a
 * time, with the stream's own buffers. Throws FileRefusedError for a file refused as a whole
 * (too large, not UTF-8, unreadable as its format, more than FILE_MAX_ROWS rows, no row, no
 * valid row); the caller rolls the transaction back, so nothing of it is kept.
 */
export async function receiveFile(
  tx: TransactionSql,
  input: { jobId: string; kind: ImportKind; format: FileFormat; body: Readable; maxBytes: number },
): Promise<ReceivedFile> {
  const { jobId, kind, format, body, maxBytes } = input;
  const { rowSchema } = IMPORT_KINDS[kind];
  const hash = createHash('sha256').update(`file:${kind}\n`);
  const metered = new MeteredBytes(maxBytes, hash);
  const text = new StrictUtf8();
  // note: the pipeline's failure (too large, not UTF-8, the client gone) reaches the readers as the
  // end of their input, and is thrown below once they stop. The request's own stream stays out of
  // the pipeline, which would destroy it: a refused file is answered on it, and the error handler
  // closes the connection after the answer.
  body.on('error', (error) => metered.destroy(error));
  body.pipe(metered);
  const flowing = pipeline(metered, text);
  flowing.catch(() => undefined);
  const rows: AsyncIterable<SourceRow> =
    format === 'csv' ? readCsvRows(text, { fields: rowFields(rowSchema), kind }) : readNdjsonRows(text);

  let received = 0;
  let staged = 0;
  let failed = 0;
  const firstErrors: RowError[] = [];
  let batch: { index: number; value: unknown }[] = [];
  let batchErrors: RowError[] = [];

  const flush = async () => {
    const checked = validateRows(rowSchema, batch.map((row) => row.value));
    const errors = [...batchErrors];
    // note: validateRows numbers the rows of the batch from 0 and returns the valid ones in order;
    // the file's positions are kept aside. Sets and maps, not searches: a batch of a thousand
    // failed rows must not cost a million comparisons.
    const failedInBatch = new Set(checked.errors.map((error) => error.index));
    for (const error of checked.errors) errors.push({ ...error, index: batch[error.index]!.index });
    const valid = batch.filter((_, position) => !failedInBatch.has(position)).map((row, n) => ({ index: row.index, row: checked.rows[n]! }));
    const repeats = await stageFileRows(tx, jobId, valid);
    const byIndex = new Map(valid.map((staged) => [staged.index, staged.row]));
    for (const index of repeats) errors.push(repeated(index, byIndex.get(index)?.external_id));
    errors.sort((a, b) => a.index - b.index);
    await recordFileRowErrors(tx, jobId, errors);
    staged += valid.length - repeats.length;
    failed += errors.length;
    for (const error of errors) if (firstErrors.length < REFUSAL_ERRORS) firstErrors.push(error);
    batch = [];
    batchErrors = [];
  };

  try {
    for await (const row of rows) {
      const index = received;
      received += 1;
      if (received > FILE_MAX_ROWS) throw new FileRefusedError(apiErrors.fileTooManyRows(FILE_MAX_ROWS));
      if ('error' in row) batchErrors.push(unreadable(index, row.error));
      else batch.push({ index, value: row.value });
      if (batch.length + batchErrors.length >= FILE_CHUNK_ROWS) await flush();
    }
    await flowing;
  } catch (error) {
    body.unpipe(metered);
    const refused = await flowing.then(
      () => undefined,
      (streamError: unknown) => streamError,
    );
    if (refused instanceof FileRefusedError) throw refused;
    // note: a CSV header naming no row field, CSV that does not parse, an empty CSV file
    if (error instanceof FileReadError) throw new FileRefusedError(apiErrors.fileUnreadable(error.message));
    if (error instanceof FileRefusedError) throw error;
    throw refused ?? error;
  }
  if (batch.length + batchErrors.length > 0) await flush();
  if (received === 0) throw new FileRefusedError(apiErrors.fileEmpty());
  if (staged === 0) throw new FileRefusedError(apiErrors.noValidRows(firstErrors));
  return { received, staged, failed, hash: hash.digest() };
}
