import { describe, expect, it } from 'vitest';
import { externalIdOf } from '../../../src/shared/rows/external-id.js';
import { ListingRowSchema } from '../../../src/shared/rows/listing-row.js';
import { MachineRowSchema } from '../../../src/shared/rows/machine-row.js';
import { validateRows } from '../../../src/shared/rows/validate-rows.js';
import { checkImportBody } from '../../../src/api/import/check-import-body.js';
import { validListing, validMachine } from '../../support/fixtures.js';
import { rowError } from '../../support/row-errors.js';

/**
 * Text that is not valid Unicode (a lone UTF-16 surrogate, which a JSON escape such as "\ud800"
 * can carry) fails the row naming the field; it is never rewritten (docs/rows.md#each-row).
 */

const MESSAGE = 'must be valid Unicode text';
const URL_BASE = 'https://cdn.example.test/';

/** [field as the reason names it, the row with the lone surrogate `s` in that field] */
const LISTING_FIELDS: [string, (s: string) => Record<string, unknown>][] = [
  ['external_id', (s) => validListing({ external_id: `SKU${s}` })],
  ['title', (s) => validListing({ title: `Dragon ${s}` })],
  ['description', (s) => validListing({ description: `${s}desc` })],
  ['material', (s) => validListing({ material: `PLA${s}` })],
  ['color', (s) => validListing({ color: `r${s}ed` })],
  ['tags[1]', (s) => validListing({ tags: ['ok', `t${s}`] })],
  ['tags[12]', (s) => validListing({ tags: [...Array.from({ length: 12 }, (_, i) => `tag-${i}`), `past the kept ${s}`] })],
  ['photo_urls[0]', (s) => validListing({ photo_urls: [`${URL_BASE}a${s}.jpg`] })],
  ['photo_urls[9]', (s) => validListing({ photo_urls: [...Array.from({ length: 9 }, (_, i) => `${URL_BASE}${i}.jpg`), `${URL_BASE}${s}`] })],
];
const MACHINE_FIELDS: [string, (s: string) => Record<string, unknown>][] = [
  ['external_id', (s) => validMachine({ external_id: `${s}asset` })],
  ['template_id', (s) => validMachine({ template_id: `tpl-${s}` })],
  ['category', (s) => validMachine({ category: `fdm${s}` })],
  ['manufacturer', (s) => validMachine({ manufacturer: s })],
  ['model', (s) => validMachine({ model: `MK${s}4` })],
  ['model_number', (s) => validMachine({ model_number: `X${s}` })],
  ['nickname', (s) => validMachine({ nickname: `Big ${s}` })],
  ['capabilities[2]', (s) => validMachine({ capabilities: ['fdm', 'resin', s] })],
];
const SURROGATES: [string, string][] = [
  ['a lone high surrogate', '\ud800'],
  ['a lone low surrogate', '\udfff'],
  ['a pair in the wrong order', '\udc09\ud83d'],
];

const cases = (fields: [string, (s: string) => Record<string, unknown>][]) =>
  fields.flatMap(([field, row]) => SURROGATES.map(([what, s]): [string, string, Record<string, unknown>] => [field, what, row(s)]));

describe('row text that is not valid Unicode', () => {
  it.each(cases(LISTING_FIELDS))('listings: %s with %s fails naming the field', (field, _what, row) => {
    expect(validateRows(ListingRowSchema, [row])).toEqual({ rows: [], errors: [rowError(0, `${field}: ${MESSAGE}`, 'invalid_characters')] });
  });

  it.each(cases(MACHINE_FIELDS))('machines: %s with %s fails naming the field', (field, _what, row) => {
    expect(validateRows(MachineRowSchema, [row])).toEqual({ rows: [], errors: [rowError(0, `${field}: ${MESSAGE}`, 'invalid_characters')] });
  });

  it('fails "SKU\\ud800" and "SKU\\udfff" as sent in JSON escapes, instead of reading both as one id', () => {
    const body: unknown = JSON.parse(`{"listings":[${JSON.stringify(validListing({ external_id: 'HIGH' }))},${JSON.stringify(validListing({ external_id: 'LOW' }))}]}`
      .replace('"HIGH"', '"SKU\\ud800"')
      .replace('"LOW"', '"SKU\\udfff"'));
    expect(checkImportBody('listings', body)).toEqual({
      refused: 'no-valid-rows',
      errors: [rowError(0, `external_id: ${MESSAGE}`, 'invalid_characters'), rowError(1, `external_id: ${MESSAGE}`, 'invalid_characters')],
    });
    expect([externalIdOf({ external_id: 'SKU\ud800' }), externalIdOf({ external_id: 'SKU\udfff' })]).toEqual([undefined, undefined]);
  });

  it('names the field once when it has other problems too (a blank id of a lone surrogate and spaces)', () => {
    expect(validateRows(ListingRowSchema, [validListing({ external_id: ' \ud800 ', title: '\ud800'.repeat(500) })]).errors).toEqual([
      rowError(0, `external_id: ${MESSAGE}; title: ${MESSAGE}`, 'invalid_characters', 'invalid_characters'),
    ]);
  });

  it('keeps well-formed text whole: surrogate pairs (emoji) in every field', () => {
    const dragon = '\ud83d\udc09';
    const [listing] = validateRows(ListingRowSchema, [
      validListing({ external_id: `SKU${dragon}`, title: `dragon ${dragon}`, tags: [dragon], photo_urls: [`${URL_BASE}${dragon}.png`] }),
    ]).rows;
    expect(listing).toMatchObject({ external_id: `SKU${dragon}`, title: `dragon ${dragon}`, tags: [dragon], photo_urls: [`${URL_BASE}${dragon}.png`] });
    const [machine] = validateRows(MachineRowSchema, [validMachine({ model: dragon, capabilities: [dragon] })]).rows;
    expect(machine).toMatchObject({ model: dragon, capabilities: [dragon] });
  });

  it('ignores a lone surrogate in a field it does not know, as it ignores the field', () => {
    expect(validateRows(ListingRowSchema, [validListing({ notes: '\ud800' })]).errors).toEqual([]);
  });
});
