import { createHash } from 'node:crypto';
import secureJson from 'secure-json-parse';
import { ApiError } from '../errors/api-error.js';
import type { BulkKind } from '../rows/bulk-kinds.js';
import { validateBulkRequest } from './bulk-request.js';
import { encodeImportRows } from '../import-job/rows-hand-over.js';
import type { RowError } from '../rows/validate-rows.js';

/** A bulk body made ready for the queue: what the import needs, without the body itself. */
export interface PreparedBulkBody {
  total: number;
  errors: RowError[];
  rowCount: number;
  /** some row carries an `external_id` (ValidatedBulkRequest) */
  matchExternalIds: boolean;
  /** the valid rows, encoded as the insert reads them (encodeImportRows), as UTF-8 bytes */
  rows: Uint8Array;
  /** requestHash of the body, when asked for (an Idempotency-Key compares it) */
  hash?: Uint8Array;
}

/**
 * What a preparation gives back: plain data, so that it crosses a thread as it is. A refusal
 * says whether the body was no JSON (`json`) or its rows were refused (`rows`): the route checks
 * the Idempotency-Key header between the two, as it did when the framework parsed the body.
 */
export type BulkBodyOutcome =
  | { ok: true; prepared: PreparedBulkBody }
  | { ok: false; stage: 'json' | 'rows'; statusCode: number; body: ApiError['body'] };

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** Same endpoint and the same body bytes give the same hash (what an Idempotency-Key compares). */
export function requestHash(kind: string, rawBody: Uint8Array): Buffer {
  return createHash('sha256').update(kind).update('\n').update(rawBody).digest();
}

/**
 * Reads a bulk request's body as the JSON parser of every other route does (strict UTF-8, then
 * JSON with the prototype-poisoning guards: any failure is 400 "Invalid JSON body"), validates
 * every row (validateBulkRequest's 400s) and encodes the valid ones. Pure and synchronous, so it
 * runs as well on a thread of its own (see BulkBodyPreparer) as inline.
 */
export function prepareBulkBody(kind: BulkKind, bytes: Uint8Array, withHash: boolean): BulkBodyOutcome {
  let parsed: unknown;
  try {
    if (bytes.length === 0) throw new SyntaxError('empty body');
    parsed = secureJson.parse(strictUtf8.decode(bytes), undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch {
    return { ok: false, stage: 'json', statusCode: 400, body: { error: 'Invalid JSON body' } };
  }
  try {
    const { total, rows, errors, matchExternalIds } = validateBulkRequest(kind, parsed);
    const hash = withHash ? requestHash(kind, bytes) : undefined;
    const encoded = Buffer.from(encodeImportRows(rows), 'utf8');
    return { ok: true, prepared: { total, errors, rowCount: rows.length, matchExternalIds, rows: encoded, ...(hash ? { hash } : {}) } };
  } catch (error) {
    if (error instanceof ApiError) return { ok: false, stage: 'rows', statusCode: error.statusCode, body: error.body };
    throw error;
  }
}
