import type { ListingRow } from '../../src/shared/rows/listing-row.js';
import { ListingRowSchema } from '../../src/shared/rows/listing-row.js';
import { validateRows } from '../../src/shared/rows/validate-rows.js';

/**
 * The listings of the whole-file benchmark: the required fields only, short values (some 130
 * bytes a line), numbered so that every row differs. note: generated a chunk at a time, never
 * held whole: a million of them is well over 100 MB of text.
 */

const photoUrl = (n: number) => `https://c.example/${n}.jpg`;

/** Line `n` of the file: one listing, as NDJSON. */
export function fileListingLine(n: number): string {
  return `{"title":"L${n}","description":"d","price_cents":1200,"currency":"USD","category":"art","material":"PLA","photo_urls":["${photoUrl(n)}"]}\n`;
}

/** The file as chunks of `linesPerChunk` lines, made as they are asked for. */
export function* fileListingChunks(rows: number, linesPerChunk = 1_000): Generator<string> {
  for (let n = 0; n < rows; n += linesPerChunk) {
    let chunk = '';
    for (let i = n; i < Math.min(rows, n + linesPerChunk); i += 1) chunk += fileListingLine(i);
    yield chunk;
  }
}

/** The file's size in bytes (its lines are ASCII). */
export function fileBytes(rows: number): number {
  let bytes = 0;
  for (let n = 0; n < rows; n += 1) bytes += fileListingLine(n).length;
  return bytes;
}

/**
 * The same listings as the service stores them, in batches, for the COPY beside the file: the
 * first row goes through the row schema, and the others differ from it only in the fields that
 * carry their number. note: checking every row would put the schema's cost on the COPY's clock;
 * `sameAsValidated` checks that the shortcut gives what the schema gives.
 */
export function* copyListingBatches(rows: number, batchRows = 1_000): Generator<ListingRow[]> {
  const template = validated(0);
  for (let n = 0; n < rows; n += batchRows) {
    const batch: ListingRow[] = [];
    for (let i = n; i < Math.min(rows, n + batchRows); i += 1) batch.push(copyListing(template, i));
    yield batch;
  }
}

function copyListing(template: ListingRow, n: number): ListingRow {
  return { ...template, title: `L${n}`, photo_urls: [photoUrl(n)], thumbnail_url: photoUrl(n) };
}

function validated(n: number): ListingRow {
  const { rows } = validateRows(ListingRowSchema, [JSON.parse(fileListingLine(n)) as unknown]);
  if (rows.length !== 1) throw new Error(`bench: file line ${n} is not a valid listing`);
  return rows[0]!;
}

/** Whether the COPY's rows `ns` equal what the row schema makes of the file's lines. */
export function sameAsValidated(ns: number[]): boolean {
  const template = validated(0);
  return ns.every((n) => JSON.stringify(copyListing(template, n)) === JSON.stringify(validated(n)));
}
