import { BULK_KINDS, type BulkKind } from '../rows/bulk-kinds.js';
import type { ListingRow } from '../rows/listing-row.js';
import type { MachineRow } from '../rows/machine-row.js';
import { validateRows, type RowError } from '../rows/validate-rows.js';
import { apiErrors } from '../errors/api-errors.js';
import { matchExternalIds } from '../rows/match-external-ids.js';

export interface RowsByKind {
  machines: MachineRow;
  listings: ListingRow;
}

export interface ValidatedBulkRequest<K extends BulkKind> {
  kind: K;
  total: number;
  rows: RowsByKind[K][];
  errors: RowError[];
  /** some row carries an `external_id`: rows are matched on it (docs/rows.md#external-id) */
  matchExternalIds: boolean;
}

/** A row that sends an `external_id` other than null, valid or not. */
function carriesExternalId(row: unknown): boolean {
  return typeof row === 'object' && row !== null && (row as Record<string, unknown>)['external_id'] != null;
}

/**
 * Checks the envelope (`{machines: [...]}` / `{listings: [...]}`) and validates every row.
 * Throws the 400s of docs/rows.md#the-request; nothing has been written when it throws.
 */
export function validateBulkRequest<K extends BulkKind>(kind: K, body: unknown): ValidatedBulkRequest<K> {
  const { maxRows, rowSchema } = BULK_KINDS[kind];
  const input = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>)[kind] : undefined;
  if (!Array.isArray(input)) {
    throw apiErrors.bulkEnvelope(kind);
  }
  if (input.length === 0) {
    throw apiErrors.noRows(kind, maxRows);
  }
  if (input.length > maxRows) {
    throw apiErrors.tooManyRows(kind, maxRows, input.length);
  }
  const matchIds = input.some(carriesExternalId);
  const validation = validateRows(rowSchema, input);
  const { rows, errors } = matchIds ? matchExternalIds(input, validation) : validation;
  if (rows.length === 0) {
    throw apiErrors.noValidRows(errors);
  }
  return { kind, total: input.length, rows: rows as RowsByKind[K][], errors, matchExternalIds: matchIds };
}
