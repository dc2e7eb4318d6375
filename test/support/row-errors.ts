import type { RowErrorCode } from '../../src/shared/rows/row-error-codes.js';
import type { RowError } from '../../src/shared/rows/row-errors.js';

/**
 * The error entry the API gives a failing row, written from its reason and the code of each
 * problem the reason names, in order: `rowError(1, 'currency: must be exactly USD', 'not_allowed')`.
 * note: written out by hand from the reason, so a test states both the text and the codes.
 */
export function rowError(index: number, reason: string, ...codes: RowErrorCode[]): RowError {
  const parts = reason.split('; ');
  if (parts.length !== codes.length) throw new Error(`rowError: ${parts.length} problems in "${reason}" but ${codes.length} codes`);
  const details = parts.map((part, i) => {
    const colon = part.indexOf(': ');
    // note: a field is a path (`photo_urls[2]`); a message with no field before it is the row's own
    const field = colon > 0 && /^[a-z_]+(\[\d+\])?$/.test(part.slice(0, colon)) ? part.slice(0, colon) : null;
    return { field, code: codes[i]!, message: field === null ? part : part.slice(colon + 2) };
  });
  return { index, reason, details };
}
