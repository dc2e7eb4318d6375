import type { ImportKind } from '../../src/shared/import/import-kinds.js';

/**
 * One logical import of the soak: what a partner means to send once, whatever it takes to get a
 * 201 for it. Every row carries a marker no other row of the run has (a listing's title, a
 * machine's model number), so the database can be asked how many copies of each exist.
 *
 * note: no row carries an `external_id`. With one, a second write of the same row would update
 * it in place and a duplicate could not be seen in the table.
 */
export interface LogicalImport {
  client: number;
  seq: number;
  accountIndex: number;
  kind: ImportKind;
  /** the Idempotency-Key, fresh for this import and sent with every attempt */
  key: string;
  /** row count, valid and invalid */
  rows: number;
  /** positions of the rows that fail validation and must be skipped */
  invalid: number[];
  /** the body, byte for byte the same on every attempt */
  body: string;
}

/** The marker of one row: `soak-<client>-<seq>-<row>`. */
export function rowMarker(markerPrefix: string, row: number): string {
  return `${markerPrefix}-${row}`;
}

export function markerPrefixOf(client: number | string, seq: number): string {
  return `soak-${client}-${seq}`;
}

/** The markers of an import's valid rows and of its invalid ones. */
export function markersOf(markerPrefix: string, rows: number, invalid: readonly number[]): { valid: string[]; invalid: string[] } {
  const skipped = new Set(invalid);
  const valid: string[] = [];
  const bad: string[] = [];
  for (let row = 0; row < rows; row += 1) (skipped.has(row) ? bad : valid).push(rowMarker(markerPrefix, row));
  return { valid, invalid: bad };
}

/** A listing of the soak, its title the row's marker; an invalid one has a negative price. */
export function soakListing(marker: string, valid: boolean, row: number): Record<string, unknown> {
  return {
    title: marker,
    description: `Soak listing ${row}: printed, checked and packed by the soak client.`,
    // note: a negative price is refused row by row, so the import still writes its valid rows.
    price_cents: valid ? 500 + row : -1,
    currency: 'USD',
    category: 'miniatures',
    material: 'PLA',
    photo_urls: [`https://cdn.example.test/soak/${marker}.jpg`],
    tags: ['soak'],
  };
}

function machine(marker: string, valid: boolean, row: number): Record<string, unknown> {
  return {
    template_id: `soak-tpl-${row % 7}`,
    category: 'fdm',
    manufacturer: 'Prusa Research',
    // note: a blank model is refused row by row.
    model: valid ? 'MK4' : '   ',
    model_number: marker,
    nickname: `Soak ${row}`,
    capabilities: ['pla', 'petg'],
  };
}

/**
 * A fresh logical import: listings most of the time, machines one time in five; one import in
 * five carries 1 to 3 rows that fail validation, never all of its rows (an import without any
 * valid row is a 400, not an import).
 */
export function newLogicalImport(client: number, seq: number, accountIndex: number, key: string, random: () => number = Math.random): LogicalImport {
  const kind: ImportKind = random() < 0.2 ? 'machines' : 'listings';
  const rows = 1 + Math.floor(random() * (kind === 'listings' ? 40 : 80));
  const invalid = new Set<number>();
  if (rows > 1 && random() < 0.2) {
    const count = Math.min(rows - 1, 1 + Math.floor(random() * 3));
    while (invalid.size < count) invalid.add(Math.floor(random() * rows));
  }
  const prefix = markerPrefixOf(client, seq);
  const make = kind === 'listings' ? soakListing : machine;
  const body = JSON.stringify({ [kind]: Array.from({ length: rows }, (_, row) => make(rowMarker(prefix, row), !invalid.has(row), row)) });
  return { client, seq, accountIndex, kind, key, rows, invalid: [...invalid].sort((a, b) => a - b), body };
}
