import type { Hash } from 'node:crypto';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import type { ApiError } from '../../shared/errors/api-error.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import { echoedText } from '../../shared/errors/echoed-text.js';
import { IMPORT_KINDS, type ImportKind } from '../../shared/import/import-kinds.js';
import { FileNotUtf8Error, FileReadError } from '../../shared/import/file/file-read-error.js';
import { readCsvRows } from '../../shared/import/file/read-csv.js';
import { readNdjsonRows } from '../../shared/import/file/read-ndjson.js';
import { rowFields } from '../../shared/import/file/row-fields.js';
import type { SourceRow } from '../../shared/import/file/source-row.js';
import { FILE_CHUNK_ROWS, stagedRow, stagedRowSize, type StagedRow } from '../../shared/repositories/import-files.js';
import type { RowError } from '../../shared/rows/row-errors.js';
import { validateRow } from '../../shared/rows/validate-rows.js';
import { externalIdOf } from '../../shared/rows/external-id.js';
import type { MirrorRemoval } from '../../shared/repositories/mirror-removal.js';
import { MERGE_RULES, validateMergeRow } from '../../shared/rows/merge-row.js';
import type { ListingRow } from '../../shared/rows/listing-row.js';
import { startRequestHash } from './request-hash.js';
import { isMerge, type UpdateMode } from '../../shared/import/update-mode.js';

/** A merge row's check, typed as a whole row's: what is staged is the row's JSON either way. */
function mergeRowCheck(kind: ImportKind) {
  const rules = MERGE_RULES[kind] as typeof MERGE_RULES.listings;
  return (value: unknown, index: number) => validateMergeRow(rules, value, index) as { row: ListingRow } | { error: RowError };
}

/** Rows a file may hold (docs/imports.md#whole-files). */
export const FILE_MAX_ROWS = 1_000_000;

/**
 * Rows checked and staged at a time: a chunk, the workers' unit. note: batches
 * of 10,000 rows (ten chunks a transaction) took no less time, and held the API above 300 MB
 * resident through a 100 MB upload (their rows outlived the young generation).
 */
export const FILE_BATCH_ROWS = FILE_CHUNK_ROWS;

/**
 * The most characters a batch holds before it is staged, whatever its rows (stagedRowSize; failed
 * rows' errors as JSON): what an upload holds in memory besides the row being read. note: 1,000
 * rows of a usual catalogue are some 200,000 characters; 1,000 rows at the row rules' limits
 * would be some 20 million, so such a batch is staged at this size instead.
 */
export const FILE_BATCH_MAX_CHARACTERS = 2 * 1024 * 1024;

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

/** The client stopped sending before the file was whole (it went away, or its time ran out). */
export class UploadAbortedError extends Error {
  override name = 'UploadAbortedError';
}

/** A batch of a file, checked, to be staged: its valid rows and its failed ones. */
export interface FileBatch {
  rows: StagedRow[];
  errors: RowError[];
  /** a mirror's: the valid external_ids its failed rows carry, which keep their rows (docs/catalogue.md#mirror) */
  seenExternalIds: string[];
}

/**
 * Stages a batch (staging-transactions.ts): returns the errors of the rows refused because an
 * earlier row of the file carries their `external_id`, which it has recorded with the batch's.
 */
export type StageBatch = (batch: FileBatch) => Promise<RowError[]>;

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

/**
 * The most characters of a reader's problem with a row that its reason shows. note: JSON.parse's
 * messages quote a few characters of the line (V8's run to some 90 in all); the readers hand them
 * on exact (the partner CLI's report keeps them so), and here they become partner text.
 */
const ROW_PROBLEM_MAX_LENGTH = 200;

/** A row the reader could not even read (a line that is not JSON): failed, as a row that is not an object. */
function unreadable(index: number, problem: string): RowError {
  const shown = echoedText(problem, { max: ROW_PROBLEM_MAX_LENGTH });
  return { index, reason: shown, details: [{ field: null, code: 'not_an_object', message: shown }] };
}

/** The answer to a file its reader stopped on. */
function refusalOf(error: FileReadError): FileRefusedError {
  return new FileRefusedError(error instanceof FileNotUtf8Error ? apiErrors.fileNotUtf8() : apiErrors.fileUnreadable(error.message));
}

/** The rows of a batch being gathered, bounded by count and by characters. */
class BatchInProgress {
  rows: StagedRow[] = [];
  errors: RowError[] = [];
  seenExternalIds: string[] = [];
  private characters = 0;

  add(row: StagedRow): void {
    this.rows.push(row);
    this.characters += stagedRowSize(row.row);
  }

  fail(error: RowError, externalId?: string): void {
    this.errors.push(error);
    if (externalId !== undefined) {
      this.seenExternalIds.push(externalId);
      this.characters += externalId.length;
    }
    // note: a failed row's details hold up to one entry per array position: its size counts.
    this.characters += JSON.stringify(error).length;
  }

  get full(): boolean {
    return this.rows.length + this.errors.length >= FILE_BATCH_ROWS || this.characters >= FILE_BATCH_MAX_CHARACTERS;
  }

  get empty(): boolean {
    return this.rows.length + this.errors.length === 0;
  }

  take(): FileBatch {
    const batch = { rows: this.rows, errors: this.errors, seenExternalIds: this.seenExternalIds };
    this.rows = [];
    this.errors = [];
    this.seenExternalIds = [];
    this.characters = 0;
    return batch;
  }
}

/**
 * Reads a whole file as it arrives: every row checked, as it comes, with the bulk endpoints'
 * rules, reasons and codes, `index` its position in the file (from 0); a batch at a time handed to
 * `stage`. Throws FileRefusedError for a file refused as a whole (too large, not UTF-8, unreadable
 * as its format, more than FILE_MAX_ROWS rows, no row, no valid row) as soon as it is known, and
 * UploadAbortedError when the client stops sending; the caller drops what was staged.
 *
 * note: what one upload holds is bounded whatever its bytes: the readers' line or record
 * (FILE_ROW_MAX_BYTES), the row being checked, and a batch (FILE_BATCH_ROWS rows, at most
 * FILE_BATCH_MAX_CHARACTERS). The request's own stream is piped into the reading, never part
 * of a pipeline that would destroy it: a refusal is answered on it. On a refusal it is unpiped and
 * left flowing, its bytes discarded, until the error handler's close ends the connection
 * (lingerOnClose): nothing waits for its end.
 */
export async function receiveFile(input: {
  kind: ImportKind;
  /** rows are checked as merge rows (docs/catalogue.md#merge) */
  update?: UpdateMode;
  /** the file is a mirror's: the ids of its failed rows are kept too */
  mirror?: MirrorRemoval | undefined;
  format: FileFormat;
  body: IncomingMessage | Readable;
  maxBytes: number;
  stage: StageBatch;
}): Promise<ReceivedFile> {
  const { kind, format, body, maxBytes, stage, update = 'replace', mirror } = input;
  const merge = isMerge(update);
  const { rowSchema } = IMPORT_KINDS[kind];
  const check = merge ? mergeRowCheck(kind) : (value: unknown, index: number) => validateRow(rowSchema, value, index);
  const hash = startRequestHash({ route: 'file', kind, update, mirror });
  const metered = new MeteredBytes(maxBytes, hash);
  // note: the first failure of the bytes' way in (too large, the client gone) is what the reading
  // meets as the end of its input; it is told apart from the readers' own refusals below.
  let stopped: Error | undefined;
  metered.on('error', (error) => (stopped ??= error));
  const abort = (error?: Error) => metered.destroy(error ?? new UploadAbortedError('the client stopped sending the file'));
  const onBodyError = (error: Error) => abort(new UploadAbortedError(error.message));
  const onBodyClose = () => {
    if (!('complete' in body) || !body.complete) abort();
  };
  body.on('error', onBodyError);
  body.once('close', onBodyClose);
  body.pipe(metered);
  const rows: AsyncIterable<SourceRow> = format === 'csv' ? readCsvRows(metered, { fields: rowFields(rowSchema), kind }) : readNdjsonRows(metered);

  let received = 0;
  let staged = 0;
  let failed = 0;
  const firstErrors: RowError[] = [];
  const batch = new BatchInProgress();
  const flush = async () => {
    const taken = batch.take();
    const { rows: valid, errors } = taken;
    // note: the reading waits for the batch to be staged. Reading the next batch meanwhile was
    // slower: the database's answers then waited behind the checks on the event loop.
    const repeats = await stage(taken);
    staged += valid.length - repeats.length;
    failed += errors.length + repeats.length;
    for (const error of [...errors, ...repeats].sort((a, b) => a.index - b.index)) if (firstErrors.length < REFUSAL_ERRORS) firstErrors.push(error);
  };

  try {
    for await (const row of rows) {
      const index = received;
      received += 1;
      if (received > FILE_MAX_ROWS) throw new FileRefusedError(apiErrors.fileTooManyRows(FILE_MAX_ROWS));
      if ('error' in row) batch.fail(unreadable(index, row.error));
      else {
        const checked = check(row.value, index);
        if ('row' in checked) batch.add(stagedRow(index, checked.row));
        else batch.fail(checked.error, mirror === undefined ? undefined : externalIdOf(row.value));
      }
      if (batch.full) await flush();
    }
    if (!batch.empty) await flush();
  } catch (error) {
    body.unpipe(metered);
    metered.destroy();
    body.resume();
    if (stopped instanceof FileRefusedError || stopped instanceof UploadAbortedError) throw stopped;
    if (error instanceof FileReadError) throw refusalOf(error);
    throw error;
  } finally {
    // note: the error listener stays: the request may still fail (its connection reset after a
    // refusal) once this is done, and an 'error' without a listener would end the process.
    body.off('close', onBodyClose);
  }
  if (received === 0) throw new FileRefusedError(apiErrors.fileEmpty());
  if (staged === 0) throw new FileRefusedError(apiErrors.noValidRows(firstErrors));
  return { received, staged, failed, hash: hash.digest() };
}
