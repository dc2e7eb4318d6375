import type { Sql, TransactionSql } from '../infra/db.js';
import { compileAllowedIps } from '../access/allowed-ips.js';
import type { KeyLimits } from '../access/key-refusal.js';
import { replacedCatalogueCount, type MirrorRemoval } from './mirror-removal.js';
import type { ImportKind } from '../import/import-kinds.js';
import { isMerge, type UpdateMode } from '../import/update-mode.js';
import { IMPORT_VIEW_COLUMNS, type ImportView } from './import-lookups.js';

/**
 * The statements of a whole file's upload (migration 0013): its import is recorded `uploading`
 * when its bytes start to arrive, its batches are staged each in a short transaction of its own
 * (import-files.ts), and one transaction accepts it (`queued`) once the file is whole. An upload
 * refused or abandoned is deleted with what it staged (the staging tables cascade). note:
 * statements only; the steps and their transactions are the API's (src/api/import/file-upload-steps.ts).
 */

/** How often an API process says it is still receiving its uploads (touchUploads). */
export const UPLOAD_HEARTBEAT_MS = 5_000;

/**
 * An upload whose process has not said so for this long was abandoned: it no longer counts
 * against the cap, and the sweep deletes it. note: six heartbeats, so that a process busy for a
 * few seconds never loses an upload it is still receiving.
 */
export const UPLOAD_ABANDONED_AFTER_MS = 30_000;

/** The advisory lock under which an account's file imports are counted and accepted. */
export async function lockAccountFileImports(tx: TransactionSql, accountId: string): Promise<void> {
  await tx`select pg_advisory_xact_lock(hashtext(${`file-imports:${accountId}`}))`;
}

/** The account's file imports in progress: uploading (and not abandoned), queued or running, `except` one of them. */
export async function countFileImportsInProgress(sql: Sql | TransactionSql, input: { accountId: string; except?: string }): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from imports
    where account_id = ${input.accountId} and source = 'file' and job_id <> ${input.except ?? ''}
      and (state in ('queued', 'running')
        or (state = 'uploading' and upload_seen_at > now() - make_interval(secs => ${UPLOAD_ABANDONED_AFTER_MS / 1_000})))`;
  return row!.n;
}

/**
 * Records an upload that has just begun: `uploading`, its counts 0, and when it began
 * (`upload_began_at`, never moved). A mirror also counts the catalogue its file replaces, its
 * guard's base (decisions K.6): the account's active rows of the kind with an external_id, now.
 */
export async function recordUploadStarted(
  tx: TransactionSql,
  input: { importId: string; accountId: string; kind: ImportKind; update: UpdateMode; mirror: MirrorRemoval | undefined; requestId: string },
): Promise<void> {
  const { mirror } = input;
  const removalBase = mirror ? tx`(${replacedCatalogueCount(tx, input.accountId, input.kind)})` : null;
  await tx`
    insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, source, merge, created_at, upload_seen_at, upload_began_at,
                         mode, removal_missing, removal_max_percent, removal_state, removal_rows, removal_base)
    values (${input.importId}, ${input.accountId}, ${input.kind}, ${input.requestId}, 0, 0, 0, '[]', 'uploading', 'file', ${isMerge(input.update)}, clock_timestamp(), clock_timestamp(), clock_timestamp(),
            ${mirror ? 'mirror' : 'upsert'}, ${mirror?.missing ?? null}, ${mirror?.maxPercent ?? null}, ${mirror ? 'pending' : null}, ${mirror ? 0 : null}, ${removalBase})`;
}

/** Says that these uploads are still being received (by the process that calls it). */
export async function touchUploads(sql: Sql, importIds: readonly string[]): Promise<void> {
  if (importIds.length === 0) return;
  await sql`update imports set upload_seen_at = clock_timestamp() where job_id = any(${importIds}::text[]) and state = 'uploading'`;
}

/**
 * The key the upload was made with, as it stands now: whether it is revoked, its end and its
 * addresses (undefined when it is gone), for keyRefusal. note: `for share` holds a revoke, a
 * roll or a change of addresses until the acceptance commits, so none of them lands between the
 * check and the commit.
 */
export async function lockUploadKey(tx: TransactionSql, keyId: string): Promise<(KeyLimits & { isRevoked: boolean }) | undefined> {
  const [key] = await tx<{ isRevoked: boolean; expiresAt: Date | null; allowedIps: string[] | null }[]>`
    select is_revoked as "isRevoked", expires_at as "expiresAt", allowed_ips as "allowedIps" from api_keys where id = ${keyId} for share`;
  if (!key) return undefined;
  return { isRevoked: key.isRevoked, expiresAtMs: key.expiresAt === null ? null : key.expiresAt.getTime(), allowedIps: compileAllowedIps(key.allowedIps) };
}

/**
 * Turns an upload into an import the workers write (`queued`), with its counts, created now; the
 * import as `GET /v1/api/imports/{id}` reads it, or undefined when the upload is no longer there
 * (swept).
 */
export async function recordUploadAccepted(
  tx: TransactionSql,
  input: { importId: string; received: number; failed: number },
): Promise<ImportView | undefined> {
  const [accepted] = await tx<ImportView[]>`
    update imports set state = 'queued', created_at = clock_timestamp(), upload_seen_at = null,
      received = ${input.received}, skipped = ${input.failed}, processed = ${input.failed}
    where job_id = ${input.importId} and state = 'uploading'
    returning ${tx.unsafe(IMPORT_VIEW_COLUMNS)}`;
  return accepted;
}

/**
 * Deletes an upload that will not be accepted, with what it staged; whether it was there. note:
 * first marked abandoned, in a statement of its own that takes a moment: from then on it holds no
 * place under the account's cap, however long the delete of a million staged rows takes, and the
 * sweep finishes it if that delete fails.
 */
export async function dropUpload(sql: Sql, importId: string): Promise<boolean> {
  await sql`update imports set upload_seen_at = '-infinity' where job_id = ${importId} and state = 'uploading'`;
  const dropped = await sql`delete from imports where job_id = ${importId} and state = 'uploading'`;
  return dropped.count > 0;
}

/**
 * Deletes up to `limit` abandoned uploads (their API process died mid-upload: not heard of for
 * UPLOAD_ABANDONED_AFTER_MS), with what they staged; returns how many. note: `skip locked`, as the
 * other sweeps (import-retention.ts).
 */
export async function sweepAbandonedUploads(sql: Sql, input: { limit: number }): Promise<number> {
  const swept = await sql`
    delete from imports
    where job_id = any(array(
      select job_id from imports
      where state = 'uploading' and upload_seen_at < now() - make_interval(secs => ${UPLOAD_ABANDONED_AFTER_MS / 1_000})
      order by upload_seen_at
      limit ${input.limit}
      for update skip locked
    ))`;
  return swept.count;
}
