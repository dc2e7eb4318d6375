import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkImportBody } from '../../../src/api/import/check-import-body.js';
import { isImportRefusal } from '../../../src/api/import/import-refusal.js';
import { ROW_ERROR_CODE_MEANINGS, ROW_ERROR_CODES, type RowErrorCode } from '../../../src/shared/rows/row-error-codes.js';
import { ListingRowSchema } from '../../../src/shared/rows/listing-row.js';
import { MachineRowSchema } from '../../../src/shared/rows/machine-row.js';
import { validateRows } from '../../../src/shared/rows/validate-rows.js';
import { validListing, validMachine } from '../../support/fixtures.js';
import { rowError } from '../../support/row-errors.js';

const detailsOf = (schema: typeof ListingRowSchema | typeof MachineRowSchema, row: unknown) => validateRows(schema, [row]).errors[0]?.details;

/** Every rule gives its problem a code a program can act on (docs/rows.md#row-error-codes). */
describe('row error codes', () => {
  it.each<[string, unknown, string | null, RowErrorCode, string]>([
    ['a row that is not an object', 'a string', null, 'not_an_object', 'row must be an object'],
    ['a missing title', validListing({ title: undefined }), 'title', 'required', 'required'],
    ['a blank title', validListing({ title: '  ' }), 'title', 'required', 'required'],
    ['a null currency', validListing({ currency: null }), 'currency', 'required', 'required'],
    ['a missing category', validListing({ category: undefined }), 'category', 'required', 'required'],
    ['a missing price', validListing({ price_cents: undefined }), 'price_cents', 'required', 'required'],
    ['no photo URL at all', validListing({ photo_urls: [] }), 'photo_urls', 'required', 'at least one https:// URL is required'],
    ['a price sent as a string', validListing({ price_cents: '1500' }), 'price_cents', 'wrong_type', 'must be a whole number'],
    ['a boolean sent as a string', validListing({ is_available: 'true' }), 'is_available', 'wrong_type', 'must be true or false'],
    ['a number as a title', validListing({ title: 42 }), 'title', 'wrong_type', 'must be a string'],
    ['a tag that is not a string', validListing({ tags: ['ok', 7] }), 'tags[1]', 'wrong_type', 'must be a string'],
    ['tags that are not an array', validListing({ tags: 'a,b' }), 'tags', 'wrong_type', 'must be an array of strings'],
    ['photo URLs that are not an array', validListing({ photo_urls: 'https://cdn.example.test/a.jpg' }), 'photo_urls', 'wrong_type', 'must be an array of https:// URLs'],
    ['print hours as a string', validListing({ print_time_hours: '3' }), 'print_time_hours', 'wrong_type', 'must be a number'],
    ['a null tag', validListing({ tags: [null] }), 'tags[0]', 'wrong_type', 'must be a string'],
    ['a photo URL that is a number', validListing({ photo_urls: [0] }), 'photo_urls[0]', 'wrong_type', 'must be an absolute https:// URL'],
    ['a currency sent as a number', validListing({ currency: 5 }), 'currency', 'wrong_type', 'must be exactly USD'],
    ['a category sent as a number', validListing({ category: 7 }), 'category', 'wrong_type', expect.stringMatching(/^must be one of: miniatures, /) as unknown as string],
    ['a currency other than USD', validListing({ currency: 'EUR' }), 'currency', 'not_allowed', 'must be exactly USD'],
    ['an unknown category', validListing({ category: 'boats' }), 'category', 'not_allowed', expect.stringMatching(/^must be one of: miniatures, /) as unknown as string],
    ['a negative price', validListing({ price_cents: -1 }), 'price_cents', 'out_of_range', 'must be >= 0'],
    ['a price beyond 2^31 - 1', validListing({ price_cents: 2 ** 31 }), 'price_cents', 'out_of_range', 'must be at most 2147483647'],
    ['negative print hours', validListing({ print_time_hours: -0.5 }), 'print_time_hours', 'out_of_range', 'must be >= 0'],
    ['a fractional price', validListing({ price_cents: 12.5 }), 'price_cents', 'not_whole_number', 'must be a whole number'],
    ['an http:// photo URL', validListing({ photo_urls: ['http://cdn.example.test/a.jpg'] }), 'photo_urls[0]', 'invalid_url', 'must be an absolute https:// URL'],
    ['a photo URL of 2,049 characters', validListing({ photo_urls: [`https://cdn.example.test/${'p'.repeat(2_025)}`] }), 'photo_urls[0]', 'too_long', 'must be at most 2048 characters'],
    ['a tag of 81 characters', validListing({ tags: ['t'.repeat(81)] }), 'tags[0]', 'too_long', 'must be at most 80 characters'],
    ['101 tags', validListing({ tags: Array.from({ length: 101 }, (_, i) => `t${i}`) }), 'tags', 'too_many_items', 'at most 100 entries'],
    ['101 photo URLs', validListing({ photo_urls: Array.from({ length: 101 }, (_, i) => `https://cdn.example.test/${i}.jpg`) }), 'photo_urls', 'too_many_items', 'at most 100 entries'],
    ['a NUL in the title', validListing({ title: 'a\u0000b' }), 'title', 'invalid_characters', 'must not contain NUL characters'],
    ['a lone surrogate in the title', validListing({ title: 'a\ud800b' }), 'title', 'invalid_characters', 'must be valid Unicode text'],
    ['a lone surrogate in a tag', validListing({ tags: ['ok', '\udc00'] }), 'tags[1]', 'invalid_characters', 'must be valid Unicode text'],
    ['a lone surrogate in a photo URL', validListing({ photo_urls: ['https://cdn.example.test/\ud800'] }), 'photo_urls[0]', 'invalid_characters', 'must be valid Unicode text'],
    ['a lone surrogate in external_id', validListing({ external_id: 'SKU\ud800' }), 'external_id', 'invalid_characters', 'must be valid Unicode text'],
    ['a blank external_id', validListing({ external_id: ' ' }), 'external_id', 'blank', 'must not be blank'],
    ['an external_id with a control character', validListing({ external_id: 'a\u0007' }), 'external_id', 'invalid_characters', 'must not contain control characters'],
    ['an external_id of 101 characters', validListing({ external_id: 'x'.repeat(101) }), 'external_id', 'too_long', 'must be at most 100 characters'],
    ['an external_id that is a number', validListing({ external_id: 7 }), 'external_id', 'wrong_type', 'must be a string'],
  ])('listings: %s', (_case, row, field, code, message) => {
    expect(detailsOf(ListingRowSchema, row)).toEqual([{ field, code, message }]);
  });

  it.each<[string, unknown, string | null, RowErrorCode, string]>([
    ['a missing model', validMachine({ model: undefined }), 'model', 'required', 'required'],
    ['101 capabilities', validMachine({ capabilities: Array.from({ length: 101 }, (_, i) => `c${i}`) }), 'capabilities', 'too_many_items', 'at most 100 entries'],
    ['a template id of 201 characters', validMachine({ template_id: 't'.repeat(201) }), 'template_id', 'too_long', 'must be at most 200 characters'],
    ['a category of 81 characters', validMachine({ category: 'c'.repeat(81) }), 'category', 'too_long', 'must be at most 80 characters'],
    ['a capability of 81 characters', validMachine({ capabilities: ['c'.repeat(81)] }), 'capabilities[0]', 'too_long', 'must be at most 80 characters'],
    ['a lone surrogate in the model', validMachine({ model: 'MK\udfff' }), 'model', 'invalid_characters', 'must be valid Unicode text'],
    ['a skill station flag as a string', validMachine({ is_skill_station: 'yes' }), 'is_skill_station', 'wrong_type', 'must be true or false'],
  ])('machines: %s', (_case, row, field, code, message) => {
    expect(detailsOf(MachineRowSchema, row)).toEqual([{ field, code, message }]);
  });

  it('gives a repeated external_id its own code, before the row\'s other problems', () => {
    const checked = checkImportBody('listings', { listings: [validListing({ external_id: 'A' }), validListing({ external_id: 'A', currency: 'EUR' })] });
    if (isImportRefusal(checked)) expect.fail(`refused: ${checked.refused}`);
    expect(checked.errors).toEqual([
      {
        ...rowError(1, 'external_id: appears more than once in this request; currency: must be exactly USD', 'duplicate_external_id', 'not_allowed'),
        external_id: 'A',
      },
    ]);
  });

  it('lists every problem of a row in the order of its reason', () => {
    const [error] = validateRows(ListingRowSchema, [validListing({ currency: 'EUR', price_cents: 12.5, tags: [1] })]).errors;
    expect(error!.reason).toBe('currency: must be exactly USD; price_cents: must be a whole number; tags[0]: must be a string');
    expect(error!.details.map((d) => d.code)).toEqual(['not_allowed', 'not_whole_number', 'wrong_type']);
  });

  it('is documented in docs/rows.md as one table row per code, in the words of ROW_ERROR_CODE_MEANINGS', () => {
    const docs = readFileSync(new URL('../../../docs/rows.md', import.meta.url), 'utf8');
    const section = docs.slice(docs.indexOf('## Row error codes'), docs.indexOf('\n## ', docs.indexOf('## Row error codes') + 1));
    const table = section.split('\n').filter((line) => /^\| `/.test(line));
    expect(table).toEqual(ROW_ERROR_CODES.map((code) => `| \`${code}\` | ${ROW_ERROR_CODE_MEANINGS[code]} |`));
  });

  it('keeps the published codes, in their published order (changing one fails here)', () => {
    expect(ROW_ERROR_CODES).toEqual([
      'not_an_object', 'required', 'wrong_type', 'not_allowed', 'out_of_range', 'not_whole_number', 'invalid_url',
      'too_many_items', 'too_long', 'invalid_characters', 'blank', 'duplicate_external_id', 'invalid_id', 'not_found', 'duplicate',
    ]);
  });
});
