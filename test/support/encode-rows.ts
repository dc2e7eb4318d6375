import type { ImportKind } from '../../src/shared/import/import-kinds.js';
import { encodeCopyRows } from '../../src/shared/import/copy-rows.js';
import { encodeImportRows } from '../../src/shared/import/rows-hand-over.js';
import type { ListingRow } from '../../src/shared/rows/listing-row.js';
import type { MachineRow } from '../../src/shared/rows/machine-row.js';

/** The two ways an import's rows reach the worker: JSON (an API before 0.11.0) and `COPY` text as bytes. */
export const ROWS_ENCODINGS = ['json', 'copy'] as const;
export type RowsEncoding = (typeof ROWS_ENCODINGS)[number];

/** Rows encoded as an API of that encoding hands them to the worker. */
export function encodeRowsAs(encoding: RowsEncoding, kind: ImportKind, rows: readonly (ListingRow | MachineRow)[]): string | Uint8Array {
  return encoding === 'json' ? encodeImportRows(rows) : new TextEncoder().encode(encodeCopyRows(kind, rows));
}

/** The same rows with every USD price in EUR, which the listings table refuses (a row check the validation would have made). */
export function inEuros(rows: string | Uint8Array): string | Uint8Array {
  return typeof rows === 'string' ? rows.replaceAll('"USD"', '"EUR"') : new TextEncoder().encode(Buffer.from(rows).toString('utf8').replaceAll('\tUSD\t', '\tEUR\t'));
}
