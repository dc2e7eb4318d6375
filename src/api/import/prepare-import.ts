import type { ImportKind } from '../../shared/import/import-kinds.js';
import { checkImportBody } from './check-import-body.js';
import { parseGuardedJson } from './guarded-json.js';
import { encodeMergeRows } from '../../shared/import/rows-hand-over.js';
import { encodeCopyRows } from '../../shared/import/copy-rows.js';
import type { RowsFormat } from '../../shared/import/import-job.js';
import type { ListingRow } from '../../shared/rows/listing-row.js';
import type { MachineRow } from '../../shared/rows/machine-row.js';
import type { MergeRow } from '../../shared/rows/merge-row.js';
import type { RowError } from '../../shared/rows/row-errors.js';
import { isImportRefusal, type ImportRefusal } from './import-refusal.js';
import { requestHash } from './request-hash.js';
import { isMerge, type UpdateMode } from '../../shared/import/update-mode.js';

/** A bulk body made ready for the queue: what the import needs, without the body itself. */
export interface PreparedImport {
  total: number;
  errors: RowError[];
  rowCount: number;
  /** some row carries an `external_id` (CheckedImportBody) */
  matchExternalIds: boolean;
  /**
   * the valid rows as UTF-8 bytes, in `rowsFormat`: `COPY` text (encodeCopyRows), or the JSON of
   * a merge (encodeMergeRows). note: bytes, made where the rows were checked: they cross from a
   * preparing thread without a copy, and the event loop hands them to Redis as they are.
   */
  rows: Uint8Array;
  rowsFormat: RowsFormat;
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
const utf8 = new TextEncoder();

/** What a bulk request asks of its body's preparation: its kind, its update mode, and whether its hash is wanted (an Idempotency-Key compares it). */
export interface PrepareRequest {
  kind: ImportKind;
  update: UpdateMode;
  withHash: boolean;
  /** `?return=rows`: whole rows are encoded with their request index (encodeCopyRows); merge rows carry theirs anyway */
  returnRows?: boolean;
}

/**
 * Reads a bulk request's body as the JSON parser of every other route does (strict UTF-8, then
 * JSON with the prototype-poisoning guards: any failure is the `invalid-json` refusal), validates
 * every row (checkImportBody's refusals) and encodes the valid ones. Pure and synchronous, so it
 * runs as well on a thread of its own (see ImportPreparer) as inline.
 */
export function prepareImport({ kind, update, withHash, returnRows }: PrepareRequest, bytes: Uint8Array): PrepareOutcome {
  let parsed: unknown;
  try {
    if (bytes.length === 0) throw new SyntaxError('empty body');
    parsed = parseGuardedJson(strictUtf8.decode(bytes));
  } catch {
    return { refused: 'invalid-json' };
  }
  const checked = checkImportBody(kind, parsed, { update });
  if (isImportRefusal(checked)) return checked;
  const { total, rows, errors, matchExternalIds } = checked;
  const hash = withHash ? requestHash({ route: 'bulk', kind, update, returnRows: returnRows === true }, bytes) : undefined;
  // note: checkImportBody gives merge rows exactly when asked to merge. A merge's rows stay JSON:
  // each carries the list of fields it changes, which its statement reads per row.
  const encoded: Pick<PreparedImport, 'rows' | 'rowsFormat'> = isMerge(update)
    ? { rows: utf8.encode(encodeMergeRows(rows as MergeRow<ListingRow | MachineRow>[])), rowsFormat: 'json' }
    : { rows: utf8.encode(encodeCopyRows(kind, rows as (ListingRow | MachineRow)[], returnRows === true ? validIndexes(total, errors) : undefined)), rowsFormat: 'copy' };
  return { total, errors, rowCount: rows.length, matchExternalIds, ...encoded, ...(hash ? { hash } : {}) };
}

/** The request positions of the valid rows, in order: every index that `errors` (one per failed row) does not hold. */
function validIndexes(total: number, errors: readonly RowError[]): number[] {
  const failed = new Set(errors.map((error) => error.index));
  const indexes: number[] = [];
  for (let index = 0; index < total; index += 1) if (!failed.has(index)) indexes.push(index);
  return indexes;
}
