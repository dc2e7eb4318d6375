import { externalIdOf } from './external-id.js';
import { reasonOf, type RowValidation } from './validate-rows.js';
import type { RowError, RowErrorDetail } from './row-errors.js';

const DUPLICATE: RowErrorDetail = { field: 'external_id', code: 'duplicate_external_id', message: 'appears more than once in this request' };

/**
 * The request-wide rules of `external_id` (docs/rows.md#external-id), applied to a request's
 * validation: each error echoes the row's valid `external_id`, and every later occurrence of an
 * id fails, whether its first occurrence is valid or not. note: only for requests in which some
 * row carries an id; the others keep the plain path.
 */
export function matchExternalIds<Row>(input: readonly unknown[], validation: RowValidation<Row>): RowValidation<Row> {
  const ids = input.map(externalIdOf);
  const firstIndex = new Map<string, number>();
  const duplicates = new Set<number>();
  ids.forEach((id, index) => {
    if (id === undefined) return;
    if (firstIndex.has(id)) duplicates.add(index);
    else firstIndex.set(id, index);
  });

  const failedAt = new Map(validation.errors.map((error) => [error.index, error]));
  const rows: Row[] = [];
  const errors: RowError[] = [];
  let next = 0; // the next valid row, in request order
  input.forEach((_, index) => {
    const id = ids[index];
    const failed = failedAt.get(index);
    if (failed === undefined) {
      const row = validation.rows[next++]!;
      if (duplicates.has(index)) errors.push(duplicateError(index, id!));
      else rows.push(row);
    } else {
      // note: external_id comes first in both row schemas, so its problem leads the others.
      const details = duplicates.has(index) ? [{ ...DUPLICATE }, ...failed.details] : failed.details;
      errors.push({ index, ...(id === undefined ? {} : { external_id: id }), reason: reasonOf(details), details });
    }
  });
  return { rows, errors };
}

function duplicateError(index: number, id: string): RowError {
  return { index, external_id: id, reason: reasonOf([DUPLICATE]), details: [{ ...DUPLICATE }] };
}
