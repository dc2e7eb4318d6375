import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import postgres from 'postgres';
import { keyRefusal, keyRefusalError } from '../../shared/access/key-refusal.js';
import { hasApiAccess } from '../../shared/access/tiers.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import { IMPORT_KINDS, type ImportKind } from '../../shared/import/import-kinds.js';
import { isMerge, type UpdateMode } from '../../shared/import/update-mode.js';
import { beginTellingCommit, CommitFailedError, type Sql, type TransactionSql } from '../../shared/infra/db.js';
import type { Account } from '../../shared/repositories/accounts.js';
import {
  countFileImportsInProgress,
  dropUpload,
  lockAccountFileImports,
  lockUploadKey,
  recordUploadAccepted,
  recordUploadStarted,
} from '../../shared/repositories/file-uploads.js';
import { isIdempotencyKeyClaimed } from '../../shared/repositories/idempotency-keys.js';
import { claimIdempotencyKeyFor } from './idempotency.js';
import { recordFileRowErrors, stageFileRows, type ChunkEncoding } from '../../shared/repositories/import-files.js';
import { recordSeenExternalIds, type MirrorRemoval } from '../../shared/repositories/mirror-removal.js';
import { findImport, type ImportView } from '../../shared/repositories/import-lookups.js';
import type { RowError } from '../../shared/rows/row-errors.js';
import type { AccountQuota, DayCharge } from '../limits/account-quota.js';
import { FileRefusedError, receiveFile, type FileBatch, type FileFormat } from './file-upload.js';
import { StagingTransactions } from './staging-transactions.js';
import type { UploadsInProgress } from './uploads-in-progress.js';

/**
 * The steps of a whole file's upload (docs/imports.md#whole-files), each a short transaction on
 * the uploads' own pool (`uploadSql`), so that neither a slow upload nor many of them hold a
 * connection that another request waits for:
 *
 * 1. open: under the account's lock, the file-import cap, then the import recorded `uploading`;
 * 2. stage: each batch of checked rows as it is read (file-upload.ts), in transactions that span
 *    the batches that come one after another and end when the client goes quiet
 *    (staging-transactions.ts);
 * 3. accept (acceptInTransaction): under the account's lock, the key still working (keyRefusal:
 *    not revoked, not ended, the client's address allowed, as every request's authentication
 *    decides), the Idempotency-Key, the cap again, the import `queued`, the day quota: the one
 *    commit after which the file is kept.
 *
 * A refusal at any step, or a client that goes away, drops the upload with what it staged; an
 * API process that dies mid-upload leaves it to the workers' sweep. Nothing of an upload is seen
 * before step 3 commits.
 */

export interface FileUploadDeps {
  /** the uploads' own pool (FILE_UPLOAD_POOL_MAX) */
  uploadSql: Sql;
  /** the API's pool, for reading the import an Idempotency-Key names */
  sql: Sql;
  quota: AccountQuota;
  config: { accountMaxFileImports: number; fileImportMaxBytes: number };
  /** the uploads this process is receiving, said to be alive every few seconds */
  uploads: UploadsInProgress;
  /** counts a refusal of the file-import cap or of the day quota */
  refused: (window: 'file-imports' | 'per-day') => void;
}

export interface FileUpload {
  account: Account;
  keyId: string;
  /** the client's address (clientIp), which the key must still allow when the file is accepted */
  clientIp: string;
  kind: ImportKind;
  /** how the rows update the rows they name (docs/catalogue.md#merge) */
  update: UpdateMode;
  /** the file is the whole catalogue of its kind: what it leaves out is removed (docs/catalogue.md#mirror) */
  mirror: MirrorRemoval | undefined;
  format: FileFormat;
  body: IncomingMessage;
  idempotencyKey: string | undefined;
  requestId: string;
  log: FastifyBaseLogger;
}

/** What an upload became: a new import, or the earlier one its Idempotency-Key names. */
export type FileUploadOutcome = { type: 'accepted'; import: ImportView } | { type: 'replayed'; import: ImportView };

/**
 * How long a refusal waits for its upload to be dropped before it is answered. note: a few
 * batches drop in milliseconds, so a refused upload has usually left nothing when it is answered;
 * a million staged rows take longer, and their drop goes on after the answer (the upload was never
 * visible; the sweep takes what a failed drop leaves), so that the refusal is not held.
 */
const DROP_WAIT_MS = 250;

/** Runs the whole upload; refusals are thrown as ApiError (a FileRefusedError's reply). */
export async function uploadFileImport(deps: FileUploadDeps, upload: FileUpload): Promise<FileUploadOutcome> {
  const importId = randomUUID();
  await openUpload(deps, upload, importId);
  deps.uploads.add(importId);
  // note: a merge's rows list the fields they change, which only their JSON carries.
  const encoding: ChunkEncoding = isMerge(upload.update) ? { format: 'json' } : { format: 'copy', kind: upload.kind };
  const staging = new StagingTransactions(deps.uploadSql, (tx, batch: FileBatch) => stageBatch(tx, importId, batch, encoding));
  let accepted = false;
  try {
    const file = await receiveFile({
      kind: upload.kind,
      update: upload.update,
      mirror: upload.mirror,
      format: upload.format,
      body: upload.body,
      maxBytes: deps.config.fileImportMaxBytes,
      stage: (batch) => staging.stage(batch),
    });
    await staging.finish();
    const outcome = await acceptUpload(deps, upload, importId, file);
    accepted = outcome.type === 'accepted';
    return outcome;
  } catch (error) {
    if (error instanceof FileRefusedError) throw error.reply;
    if (error instanceof AcceptanceOutcomeUnknown) {
      upload.log.warn({ err: error.cause, importId }, 'file import: the answer to the acceptance\'s commit was lost; it may have committed');
      throw apiErrors.importOutcomeUnknown(importId);
    }
    throw error;
  } finally {
    deps.uploads.delete(importId);
    if (!accepted) {
      // note: not awaited, so that the refusal is not held by a transaction waiting for the pool;
      // the drop's delete waits in PostgreSQL for the rollback of what is still open (its rows
      // hold the import's record), and so never misses them.
      void staging.abandon();
      await dropWithin(deps.uploadSql, importId, upload.log);
    }
  }
}

/**
 * Whether the account already holds the cap's number of file imports (ACCOUNT_MAX_FILE_IMPORTS):
 * uploading, queued or running, `except` the upload itself (at its acceptance). Unless the
 * request's Idempotency-Key (`replayKey`) names an earlier upload: that retry replays its own
 * import, cap or not (it is told once its file has been read and compared). note: the one
 * count of the cap, before the body is read (the route), as the upload opens and as it is accepted.
 */
export async function atFileImportCap(
  sql: Sql | TransactionSql,
  config: FileUploadDeps['config'],
  input: { accountId: string; replayKey?: string | undefined; except?: string },
): Promise<boolean> {
  if (input.replayKey !== undefined && (await isIdempotencyKeyClaimed(sql, { accountId: input.accountId, key: input.replayKey }))) return false;
  const inProgress = await countFileImportsInProgress(sql, { accountId: input.accountId, ...(input.except === undefined ? {} : { except: input.except }) });
  return inProgress >= config.accountMaxFileImports;
}

async function openUpload(deps: FileUploadDeps, upload: FileUpload, importId: string): Promise<void> {
  const { account } = upload;
  const opened = await deps.uploadSql.begin(async (tx) => {
    await lockAccountFileImports(tx, account.id);
    if (await atFileImportCap(tx, deps.config, { accountId: account.id, replayKey: upload.idempotencyKey })) return false;
    await recordUploadStarted(tx, { importId, accountId: account.id, kind: upload.kind, update: upload.update, mirror: upload.mirror, requestId: upload.requestId });
    return true;
  });
  if (!opened) {
    deps.refused('file-imports');
    throw apiErrors.tooManyFileImports();
  }
}

const repeated = (index: number, externalId: string | null): RowError => ({
  index,
  ...(externalId === null ? {} : { external_id: externalId }),
  reason: 'external_id: appears more than once in this file',
  details: [{ field: 'external_id', code: 'duplicate_external_id', message: 'appears more than once in this file' }],
});

/** Stages a batch within a staging transaction (staging-transactions.ts). */
async function stageBatch(tx: TransactionSql, importId: string, batch: FileBatch, encoding: ChunkEncoding): Promise<RowError[]> {
  await recordSeenExternalIds(tx, importId, batch.seenExternalIds);
  const repeats = await stageFileRows(tx, importId, batch.rows, encoding);
  const externalIds = new Map(batch.rows.map((row) => [row.index, row.externalId]));
  const repeatErrors = repeats.map((index) => repeated(index, externalIds.get(index) ?? null));
  await recordFileRowErrors(tx, importId, [...batch.errors, ...repeatErrors].sort((a, b) => a.index - b.index));
  return repeatErrors;
}

/** The acceptance's transaction failed at its COMMIT, whose answer was lost: it may have committed. */
class AcceptanceOutcomeUnknown extends Error {}

/**
 * Whether a failed COMMIT is known to have rolled back: PostgreSQL answered it with an error of
 * the transaction (a deferred check, a serialization failure). note: not one that ends the session
 * (FATAL, class 08 connection exception, class 57 operator intervention): those, like a connection
 * that breaks without a word, may come after the commit was made.
 */
function rolledBack(error: unknown): boolean {
  return error instanceof postgres.PostgresError && error.severity !== 'FATAL' && error.severity !== 'PANIC' && !/^(08|57)/.test(error.code);
}

/** What an acceptance's transaction decided: the upload accepted, with the day charge it took, or an earlier upload's import to replay. */
type Acceptance = { type: 'accepted'; import: ImportView; charge: DayCharge | undefined } | { type: 'replayed'; importId: string };

/**
 * Step 3, the acceptance's transaction: under the account's lock, the key (keyRefusal: the rule
 * every request is authenticated by, so a key revoked, ended or moved to other addresses while
 * its file arrived gets no import), the Idempotency-Key, the cap again, the import `queued`, and
 * last the day quota, so that a refusal before it charges nothing.
 */
async function acceptInTransaction(
  tx: TransactionSql,
  deps: FileUploadDeps,
  upload: FileUpload,
  importId: string,
  file: { received: number; failed: number; hash: Buffer },
): Promise<Acceptance> {
  const { account } = upload;
  const refusal = keyRefusal(await lockUploadKey(tx, upload.keyId), upload.clientIp);
  if (refusal !== undefined) throw keyRefusalError(refusal);
  await lockAccountFileImports(tx, account.id);
  if (upload.idempotencyKey !== undefined) {
    const claim = await claimIdempotencyKeyFor(tx, { accountId: account.id, key: upload.idempotencyKey, hash: file.hash, importId });
    if (claim.type === 'earlier') return { type: 'replayed', importId: claim.importId };
  }
  if (await atFileImportCap(tx, deps.config, { accountId: account.id, except: importId })) {
    deps.refused('file-imports');
    throw apiErrors.tooManyFileImports();
  }
  const view = await recordUploadAccepted(tx, { importId, received: file.received, failed: file.failed });
  if (!view) throw new Error(`the upload ${importId} was dropped before it was accepted`);
  // note: the request itself counted once in both windows; the file counts as the bulk requests
  // it replaces in the day window.
  const points = Math.ceil(file.received / IMPORT_KINDS[upload.kind].maxRows) - 1;
  if (!hasApiAccess(account.subscriptionTier) || points <= 0) return { type: 'accepted', import: view, charge: undefined };
  const charge = await deps.quota.chargeDay(account.id, account.subscriptionTier, points);
  if (!charge.ok) {
    deps.refused('per-day');
    throw apiErrors.rateLimited('per-day', charge.retryAfterSec);
  }
  return { type: 'accepted', import: view, charge: charge.charge };
}

async function acceptUpload(
  deps: FileUploadDeps,
  upload: FileUpload,
  importId: string,
  file: { received: number; failed: number; hash: Buffer },
): Promise<FileUploadOutcome> {
  let acceptance: Acceptance;
  try {
    acceptance = await beginTellingCommit(deps.uploadSql, (tx) => acceptInTransaction(tx, deps, upload, importId, file));
  } catch (error) {
    // note: an error before the COMMIT rolled everything back, the charge being the last step;
    // a COMMIT that PostgreSQL answered with an error rolled back too, and its charge is given
    // back; a COMMIT whose answer was lost with its connection may have kept the file, and its
    // charge stands.
    if (!(error instanceof CommitFailedError)) throw error;
    const decided = error.value as Acceptance;
    if (decided.type === 'accepted') {
      if (!rolledBack(error.cause)) throw new AcceptanceOutcomeUnknown(`the acceptance of ${importId} may have committed`, { cause: error.cause });
      if (decided.charge !== undefined) deps.quota.refundDay(decided.charge);
    }
    throw error.cause;
  }
  if (acceptance.type === 'accepted') return { type: 'accepted', import: acceptance.import };
  const earlier = await findImport(deps.sql, upload.account.id, acceptance.importId);
  if (!earlier) throw new Error(`the import ${acceptance.importId} an Idempotency-Key names cannot be read`);
  return { type: 'replayed', import: earlier };
}

async function dropWithin(uploadSql: Sql, importId: string, log: FastifyBaseLogger): Promise<void> {
  const dropped = dropUpload(uploadSql, importId).catch((err: unknown) => log.warn({ err, importId }, 'upload not dropped; the workers\' sweep drops it'));
  await Promise.race([dropped, delay(DROP_WAIT_MS, undefined, { ref: false })]);
}
