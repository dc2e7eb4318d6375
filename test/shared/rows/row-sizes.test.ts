import { describe, expect, it } from 'vitest';
import { ListingRowSchema } from '../../../src/shared/rows/listing-row.js';
import { MachineRowSchema } from '../../../src/shared/rows/machine-row.js';
import { validateRows } from '../../../src/shared/rows/validate-rows.js';
import { validListing, validMachine } from '../../support/fixtures.js';
import { rowError } from '../../support/row-errors.js';
import { rowErrorBreaks } from '../../support/hostile-rows.js';

/**
 * Every array of a row has a cap on the entries sent (docs/rows.md#row-sizes), so that what a
 * failing row costs, in validation time and in the size of its error, does not grow with what it
 * carries.
 */

const CAP = 100;
const url = (i: number) => `https://cdn.example.test/photo-${i}.jpg`;

type Case = [field: string, schema: typeof ListingRowSchema | typeof MachineRowSchema, row: (entries: unknown[]) => Record<string, unknown>, entry: (i: number) => unknown];
const ARRAYS: Case[] = [
  ['tags', ListingRowSchema, (tags) => validListing({ tags }), (i) => `tag-${i}`],
  ['photo_urls', ListingRowSchema, (photo_urls) => validListing({ photo_urls }), url],
  ['capabilities', MachineRowSchema, (capabilities) => validMachine({ capabilities }), (i) => `cap-${i}`],
];

/**
 * An array of `length` entries that counts how many of its entries are read. note: a Proxy of an
 * array is an array to Array.isArray and to zod, and every read of an entry passes its `get`.
 */
function countingArray(length: number, entry: unknown): { array: unknown[]; reads: () => number } {
  let reads = 0;
  const array = new Proxy(Array<unknown>(length).fill(entry), {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) reads += 1;
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
  return { array, reads: () => reads };
}

describe('row sizes: arrays capped on the entries sent', () => {
  it.each(ARRAYS)('%s: 100 entries pass', (_field, schema, row, entry) => {
    const { rows, errors } = validateRows(schema, [row(Array.from({ length: CAP }, (_, i) => entry(i)))]);
    expect(errors).toEqual([]);
    expect(rows).toHaveLength(1);
  });

  it.each(ARRAYS)('%s: 101 entries fail as too_many_items, naming the field', (field, schema, row, entry) => {
    const { rows, errors } = validateRows(schema, [row(Array.from({ length: CAP + 1 }, (_, i) => entry(i)))]);
    expect(rows).toEqual([]);
    expect(errors).toEqual([rowError(0, `${field}: at most 100 entries`, 'too_many_items')]);
  });

  it.each(ARRAYS)('%s: 250,000 entries of the wrong type fail with one small detail, and no entry is read', (field, schema, row) => {
    const { array, reads } = countingArray(250_000, 7);

    const { errors } = validateRows(schema, [row(array)]);

    expect(errors).toEqual([rowError(0, `${field}: at most 100 entries`, 'too_many_items')]);
    expect(JSON.stringify(errors[0]).length).toBeLessThan(2_048);
    expect(reads()).toBeLessThanOrEqual(CAP);
  });

  it('names an over-cap array once beside the row\'s other problems, in schema order, without its entries', () => {
    const row = validListing({ currency: 'EUR', tags: Array<number>(5_000).fill(1), photo_urls: Array<string>(5_000).fill('http://x') });
    const [error] = validateRows(ListingRowSchema, [row]).errors;
    expect(error).toEqual(
      rowError(0, 'currency: must be exactly USD; photo_urls: at most 100 entries; tags: at most 100 entries', 'not_allowed', 'too_many_items', 'too_many_items'),
    );
    expect(rowErrorBreaks(error!, row)).toEqual([]);
  });

  it('lists at most one detail per entry position up to the cap: 100 bad tags and 100 bad photo URLs', () => {
    const row = validListing({ tags: Array<number>(CAP).fill(1), photo_urls: Array<string>(CAP).fill('http://cdn.example.test/a.jpg') });
    const [error] = validateRows(ListingRowSchema, [row]).errors;
    expect(error!.details.map((d) => d.field)).toEqual([
      ...Array.from({ length: CAP }, (_, i) => `photo_urls[${i}]`),
      ...Array.from({ length: CAP }, (_, i) => `tags[${i}]`),
    ]);
    expect(rowErrorBreaks(error!, row)).toEqual([]);
  });

  it('still keeps the first 10 of 100 tags and the first 8 of 100 photo URLs', () => {
    const tags = Array.from({ length: CAP }, (_, i) => `tag-${i}`);
    const photos = Array.from({ length: CAP }, (_, i) => url(i));
    const [stored] = validateRows(ListingRowSchema, [validListing({ tags, photo_urls: photos })]).rows;
    expect(stored?.tags).toEqual(tags.slice(0, 10));
    expect(stored?.photo_urls).toEqual(photos.slice(0, 8));
    expect(stored?.thumbnail_url).toBe(photos[0]);
  });
});
