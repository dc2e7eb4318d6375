import type { ImportKind } from '../../shared/import/import-kinds.js';
import { checkImportBody } from './check-import-body.js';
import { parseGuardedJson } from './guarded-json.js';
import { encodeImportRows, encodeMergeRows } from '../../shared/import/rows-hand-over.js';
import type { ListingRow } from '../../shared/rows/listing-row.js';
import type { MachineRow } from '../../shared/rows/machine-row.js';
import type { MergeRow } from '../../shared/rows/merge-row.js';
import type { RowError } from '../../shared/rows/row-errors.js';
import { isImportRefusal, type ImportRefusal } from './import-refusal.js';
import { requestHash } from './request-hash.js';

/** A bulk body made ready for the queue: what the import needs, without the body itself. */
export interface PreparedImport {
  total: number;
  errors: RowError[];
  rowCount: number;
  /** some row carries an `external_id` (CheckedImportBody) */
  matchExternalIds: boolean;
  /** the rows merge into the rows they name (docs/catalogue.md#merge) */
  merge: boolean;
  /**
   * the valid rows, encoded as the insert reads them (encodeImportRows). note: text rather than
   * its UTF-8 bytes: ioredis writes a text argument straight to the socket, encoding it as it
   * goes, where bytes cost a conversion first and a copy into the command's buffer after.
   */
  rows: string;
  /** requestHash of the request, when asked for (an Idempotency-Key compares it) */
  hash?: Uint8Array;
}

/**
 * What a preparation gives back: plain data, so that it crosses a thread as it is. A refusal of
 * `invalid-json` is told from the others: the route checks the Idempotency-Key header between
 * the two, as it did when the framework parsed the body.
 */
export type PrepareOutcome = PreparedImport | ImportRefusal;

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads a bulk request's body as the JSON parser of every other route does (strict UTF-8, then
 * JSON with the prototype-poisoning guards: any failure is the `invalid-json` refusal), validates
 * every row (checkImportBody's refusals) and encodes the valid ones. Pure and synchronous, so it
 * runs as well on a thread of its own (see ImportPreparer) as inline.
 */
export function prepareImport(kind: ImportKind, bytes: Uint8Array, withHash: boolean, merge = false): PrepareOutcome {
  let parsed: unknown;
  try {
    if (bytes.length === 0) throw new SyntaxError('empty body');
    parsed = parseGuardedJson(strictUtf8.decode(bytes));
  } catch {
    return { refused: 'invalid-json' };
  }
  const checked = checkImportBody(kind, parsed, { merge });
  if (isImportRefusal(checked)) return checked;
  const { total, rows, errors, matchExternalIds } = checked;
  const hash = withHash ? requestHash({ route: 'bulk', kind, merge }, bytes) : undefined;
  // note: checkImportBody gives merge rows exactly when asked to merge
  const encoded = merge ? encodeMergeRows(rows as MergeRow<ListingRow | MachineRow>[]) : encodeImportRows(rows as (ListingRow | MachineRow)[]);
  return { total, errors, rowCount: rows.length, matchExternalIds, merge, rows: encoded, ...(hash ? { hash } : {}) };
}
