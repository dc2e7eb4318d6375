import type { ApiError } from '../../shared/errors/api-error.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import type { ImportKind } from '../../shared/import/import-kinds.js';
import type { NewRowRemoval } from '../../shared/import/import-queue.js';
import { encodeRemovalEntries, type RowRemovalAction } from '../../shared/import/row-removal-job.js';
import { RowsHandOver } from '../../shared/import/rows-hand-over.js';
import type { Sql } from '../../shared/infra/db.js';
import { isIdempotencyKeyClaimed } from '../../shared/repositories/idempotency-keys.js';
import { findNamedRows } from '../../shared/repositories/row-removals.js';
import {
  byIndex,
  checkRemovalBody,
  entryError,
  MAX_REMOVAL_ENTRIES,
  notFoundDetail,
  type RemovalBodyRefusal,
} from '../../shared/rows/removal-entries.js';
import { parseGuardedJson } from './guarded-json.js';
import { requestHash } from './request-hash.js';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** What a request asks: which rows, by whom, and how it is answered. */
export interface RowRemovalRequest {
  kind: ImportKind;
  action: RowRemovalAction;
  accountId: string;
  requestId: string;
  dryRun: boolean;
  /** the request's Idempotency-Key, when it sent one */
  key: string | undefined;
  /** `?return=rows` */
  returnRows: boolean;
}

/** The 400 of a body refused as a whole. */
function refusalError(kind: ImportKind, refusal: RemovalBodyRefusal): ApiError {
  switch (refusal.refused) {
    case 'no-entries-array':
      return apiErrors.entriesEnvelope();
    case 'no-entries':
      return apiErrors.noRows(kind, MAX_REMOVAL_ENTRIES);
    case 'too-many-entries':
      return apiErrors.tooManyRows(kind, MAX_REMOVAL_ENTRIES, refusal.received);
  }
}

/**
 * Reads an archive or delete body (docs/catalogue.md#archive-and-delete) into the import to queue:
 * the body as every bulk body is read (strict UTF-8, guarded JSON; 400 otherwise), its entries
 * checked (checkRemovalBody), and the well-formed ones looked up in one indexed read, so that a
 * request that names no row of the account is answered 400 `no valid rows` before anything is
 * queued. The worker looks them up again in its transaction (an entry whose row went meanwhile
 * fails there, `not_found`).
 *
 * note: not when the request's Idempotency-Key is claimed already. It may be a repeat of a
 * request that deleted those rows: its answer is the recorded one, never a 400 for rows it
 * removed itself. The worker's look-up is the only one then. The body (at most 1 MB) is parsed
 * inline: some milliseconds, not the bulk bodies' 2 MB of rows to validate.
 */
export async function readRowRemoval(
  sql: Sql,
  bytes: Buffer,
  request: RowRemovalRequest,
): Promise<{ newImport: NewRowRemoval; idempotency?: { key: string; hash: Buffer } }> {
  const { kind, action, accountId, key } = request;
  let parsed: unknown;
  try {
    if (bytes.length === 0) throw new SyntaxError('empty body');
    parsed = parseGuardedJson(strictUtf8.decode(bytes));
  } catch {
    throw apiErrors.invalidJson();
  }
  const checked = checkRemovalBody(parsed);
  if ('refused' in checked) throw refusalError(kind, checked);
  const { by, total } = checked;
  let { entries, errors } = checked;
  const mayBeRepeat = key !== undefined && (await isIdempotencyKeyClaimed(sql, { accountId, key }));
  if (entries.length > 0 && !mayBeRepeat) {
    const found = await findNamedRows(sql, { kind, accountId, by, keys: entries.map((entry) => entry.key) });
    const missing = entries.filter((entry) => !found.has(entry.key));
    errors = byIndex(errors, missing.map(({ index, key: named }) => entryError(by, index, [notFoundDetail(by, kind)], named)));
    entries = entries.filter((entry) => found.has(entry.key));
  }
  if (entries.length === 0) throw apiErrors.noValidRows(errors);
  const newImport: NewRowRemoval = {
    action,
    kind,
    accountId,
    requestId: request.requestId,
    total,
    errors,
    by,
    entryCount: entries.length,
    dryRun: request.dryRun,
    ...(request.returnRows ? { returnRows: true } : {}),
    createdAt: Date.now(),
    rows: new RowsHandOver(encodeRemovalEntries(entries)),
  };
  return { newImport, ...(key === undefined ? {} : { idempotency: { key, hash: requestHash({ route: `bulk-${action}`, kind, returnRows: request.returnRows }, bytes) } }) };
}
