import type { RowError } from '../../shared/rows/row-errors.js';
import type { ImportKind } from '../../shared/import/import-kinds.js';

/**
 * Why a bulk body was refused as a whole, before anything was queued: plain data, so that it
 * crosses the preparing thread as it is. The API answers each with its 400 (import-error-replies.ts,
 * texts in the error catalogue); nothing was written.
 */
export type ImportRefusal =
  /** the body is not strict UTF-8 JSON, or it tries to poison a prototype */
  | { refused: 'invalid-json' }
  /** the body is not an object with the kind's array */
  | { refused: 'no-envelope'; kind: ImportKind }
  | { refused: 'no-rows'; kind: ImportKind; maxRows: number }
  | { refused: 'too-many-rows'; kind: ImportKind; maxRows: number; received: number }
  /** every row failed: each one's reason */
  | { refused: 'no-valid-rows'; errors: RowError[] };

export function isImportRefusal(outcome: object): outcome is ImportRefusal {
  return 'refused' in outcome;
}
