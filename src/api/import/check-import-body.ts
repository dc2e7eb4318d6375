import { IMPORT_KINDS, type ImportKind } from '../../shared/import/import-kinds.js';
import type { ListingRow } from '../../shared/rows/listing-row.js';
import type { MachineRow } from '../../shared/rows/machine-row.js';
import { validateRows, type RowValidation } from '../../shared/rows/validate-rows.js';
import { MERGE_RULES, validateMergeRow, type MergeRow } from '../../shared/rows/merge-row.js';
import type { RowError } from '../../shared/rows/row-errors.js';
import { matchExternalIds } from '../../shared/rows/match-external-ids.js';
import type { ImportRefusal } from './import-refusal.js';
import { isMerge, type UpdateMode } from '../../shared/import/update-mode.js';

export interface RowsByKind {
  machines: MachineRow;
  listings: ListingRow;
}

export interface CheckedImportBody<K extends ImportKind> {
  kind: K;
  total: number;
  /** whole rows, or with `merge` the fields each row carries (merge-row.ts) */
  rows: (RowsByKind[K] | MergeRow<RowsByKind[K]>)[];
  errors: RowError[];
  /** some row carries an `external_id`: rows are matched on it (docs/rows.md#external-id) */
  matchExternalIds: boolean;
}

/** A row that sends an `external_id` other than null, valid or not. */
function carriesExternalId(row: unknown): boolean {
  return typeof row === 'object' && row !== null && (row as Record<string, unknown>)['external_id'] != null;
}

/** Every row checked as a merge row (docs/catalogue.md#merge). */
function validateMergeRows(kind: ImportKind, input: readonly unknown[]): RowValidation<MergeRow<RowsByKind[ImportKind]>> {
  const rules = MERGE_RULES[kind];
  const validation: RowValidation<MergeRow<RowsByKind[ImportKind]>> = { rows: [], errors: [] };
  input.forEach((candidate, index) => {
    const checked = validateMergeRow<RowsByKind[ImportKind]>(rules, candidate, index);
    if ('row' in checked) validation.rows.push(checked.row);
    else validation.errors.push(checked.error);
  });
  return validation;
}

/**
 * Checks the envelope (`{machines: [...]}` / `{listings: [...]}`) and validates every row, as a
 * whole row or, with `merge`, as the fields it carries. Returns the body's refusal instead when it
 * is refused as a whole (docs/rows.md#the-request).
 */
export function checkImportBody<K extends ImportKind>(kind: K, body: unknown, { update = 'replace' }: { update?: UpdateMode } = {}): CheckedImportBody<K> | ImportRefusal {
  const merge = isMerge(update);
  const { maxRows, rowSchema } = IMPORT_KINDS[kind];
  const input = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>)[kind] : undefined;
  if (!Array.isArray(input)) return { refused: 'no-envelope', kind };
  if (input.length === 0) return { refused: 'no-rows', kind, maxRows };
  if (input.length > maxRows) return { refused: 'too-many-rows', kind, maxRows, received: input.length };
  // note: every merge row is matched on its external_id (one without fails)
  const matchIds = merge || input.some(carriesExternalId);
  const validation = merge ? validateMergeRows(kind, input) : validateRows(rowSchema, input);
  const { rows, errors } = matchIds ? matchExternalIds<unknown>(input, validation) : validation;
  if (rows.length === 0) return { refused: 'no-valid-rows', errors };
  return { kind, total: input.length, rows: rows as RowsByKind[K][], errors, matchExternalIds: matchIds };
}
