import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import postgres from 'postgres';
import { keyRefusal, keyRefusalError } from '../../shared/access/key-refusal.js';
import { hasApiAccess } from '../../shared/access/tiers.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import { IMPORT_KINDS, type ImportKind } from '../../shared/import/import-kinds.js';
import type { Sql, TransactionSql } from '../../shared/infra/db.js';
import type { Account } from '../../shared/repositories/accounts.js';
import {
  countFileImportsInProgress,
  dropUpload,
  lockAccountFileImports,
  lockUploadKey,
  recordUploadAccepted,
  recordUploadStarted,
} from '../../shared/repositories/file-uploads.js';
import { claimIdempotencyKey, isIdempotencyKeyClaimed } from '../../shared/repositories/idempotency-keys.js';
import { recordFileRowErrors, stageFileRows } from '../../shared/repositories/import-files.js';
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
 * 3. accept: under the account's lock, the key still working (keyRefusal: not revoked, not ended,
 *    the client's address allowed, as every request's authentication decides), the Idempotency-Key, the cap again,
 *    the day quota, then the import `queued`: the one commit after which the file is kept.
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
  /** the rows merge into the rows they name (docs/catalogue.md#merge) */
  merge: boolean;
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
  const staging = new StagingTransactions(deps.uploadSql, (tx, batch: FileBatch) => stageBatch(tx, importId, batch));
  let accepted = false;
  try {
    const file = await receiveFile({
      kind: upload.kind,
      merge: upload.merge,
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
 * Whether the account already holds the cap's number of file imports, unless the request's
 * Idempotency-Key names an earlier upload: that retry replays its own import, cap or not (it is
 * told once its file has been read and compared).
 */
export async function atFileImportCap(
  sql: Sql | TransactionSql,
  config: FileUploadDeps['config'],
  input: { accountId: string; idempotencyKey: string | undefined },
): Promise<boolean> {
  if (input.idempotencyKey !== undefined && (await isIdempotencyKeyClaimed(sql, { accountId: input.accountId, key: input.idempotencyKey }))) return false;
  const inProgress = await countFileImportsInProgress(sql, { accountId: input.accountId });
  return inProgress >= config.accountMaxFileImports;
}

async function openUpload(deps: FileUploadDeps, upload: FileUpload, importId: string): Promise<void> {
  const { account } = upload;
  const opened = await deps.uploadSql.begin(async (tx) => {
    await lockAccountFileImports(tx, account.id);
    if (await atFileImportCap(tx, deps.config, { accountId: account.id, idempotencyKey: upload.idempotencyKey })) return false;
    await recordUploadStarted(tx, { importId, accountId: account.id, kind: upload.kind, merge: upload.merge, mirror: upload.mirror, requestId: upload.requestId });
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
async function stageBatch(tx: TransactionSql, importId: string, batch: FileBatch): Promise<RowError[]> {
  await recordSeenExternalIds(tx, importId, batch.seenExternalIds);
  const repeats = await stageFileRows(tx, importId, batch.rows);
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

async function acceptUpload(
  deps: FileUploadDeps,
  upload: FileUpload,
  importId: string,
  file: { received: number; failed: number; hash: Buffer },
): Promise<FileUploadOutcome> {
  const { account } = upload;
  let charged: DayCharge | undefined;
  let committing = false;
  let replayOf: string | undefined;
  try {
    const accepted = await deps.uploadSql.begin(async (tx): Promise<ImportView | undefined> => {
      // note: the key as it stands now, by the rule every request is authenticated by: a key
      // revoked, ended or moved to other addresses while its file arrived gets no import.
      const refusal = keyRefusal(await lockUploadKey(tx, upload.keyId), upload.clientIp);
      if (refusal !== undefined) throw keyRefusalError(refusal);
      await lockAccountFileImports(tx, account.id);
      if (upload.idempotencyKey !== undefined) {
        const claim = await claimIdempotencyKey(tx, { accountId: account.id, key: upload.idempotencyKey, requestHash: file.hash, jobId: importId });
        if (!claim.claimed && !claim.requestHash.equals(file.hash)) throw apiErrors.idempotencyKeyReused();
        if (!claim.claimed) {
          replayOf = claim.jobId;
          return undefined;
        }
      }
      const inProgress = await countFileImportsInProgress(tx, { accountId: account.id, except: importId });
      if (inProgress >= deps.config.accountMaxFileImports) {
        deps.refused('file-imports');
        throw apiErrors.tooManyFileImports();
      }
      const view = await recordUploadAccepted(tx, { importId, received: file.received, failed: file.failed });
      if (!view) throw new Error(`the upload ${importId} was dropped before it was accepted`);
      // note: the request itself counted once in both windows; the file counts as the bulk requests
      // it replaces in the day window. Last, so that a refusal above charges nothing.
      const points = Math.ceil(file.received / IMPORT_KINDS[upload.kind].maxRows) - 1;
      if (hasApiAccess(account.subscriptionTier) && points > 0) {
        const charge = await deps.quota.chargeDay(account.id, account.subscriptionTier, points);
        if (!charge.ok) {
          deps.refused('per-day');
          throw apiErrors.rateLimited('per-day', charge.retryAfterSec);
        }
        charged = charge.charge;
      }
      committing = true;
      return view;
    });
    if (accepted) return { type: 'accepted', import: accepted };
  } catch (error) {
    // note: an error after the last statement is the COMMIT's. When the connection went with it,
    // the file may be kept, and its charge stands; otherwise the transaction rolled back (so did
    // a COMMIT PostgreSQL answered with an error), and nothing of it counts.
    if (committing && !rolledBack(error)) throw new AcceptanceOutcomeUnknown(`the acceptance of ${importId} may have committed`, { cause: error });
    if (charged !== undefined) deps.quota.refundDay(charged);
    throw error;
  }
  const earlier = await findImport(deps.sql, account.id, replayOf!);
  if (!earlier) throw new Error(`the import ${replayOf} an Idempotency-Key names cannot be read`);
  return { type: 'replayed', import: earlier };
}

async function dropWithin(uploadSql: Sql, importId: string, log: FastifyBaseLogger): Promise<void> {
  const dropped = dropUpload(uploadSql, importId).catch((err: unknown) => log.warn({ err, importId }, 'upload not dropped; the workers\' sweep drops it'));
  await Promise.race([dropped, delay(DROP_WAIT_MS, undefined, { ref: false })]);
}
