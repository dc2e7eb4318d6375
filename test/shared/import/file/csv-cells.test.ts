import { describe, expect, it } from 'vitest';
import { coerceCell, csvRecordToRow, mapCsvHeader } from '../../../../src/shared/import/file/csv-cells.js';
import { rowFields } from '../../../../src/shared/import/file/row-fields.js';
import { ListingRowSchema } from '../../../../src/shared/rows/listing-row.js';
import { MachineRowSchema } from '../../../../src/shared/rows/machine-row.js';
import { validateRows } from '../../../../src/shared/rows/validate-rows.js';

const listingFields = rowFields(ListingRowSchema);

describe('rowFields (field types read from the shared schemas)', () => {
  it('lists every listing field with its JSON type and whether it is required', () => {
    expect(listingFields).toEqual([
      { name: 'external_id', type: 'string', required: false },
      { name: 'title', type: 'string', required: true },
      { name: 'description', type: 'string', required: true },
      { name: 'currency', type: 'string', required: true },
      { name: 'price_cents', type: 'number', required: true },
      { name: 'category', type: 'string', required: true },
      { name: 'material', type: 'string', required: true },
      { name: 'photo_urls', type: 'array', required: true, maxEntries: 100 },
      { name: 'color', type: 'string', required: false },
      { name: 'tags', type: 'array', required: false, maxEntries: 100 },
      { name: 'print_time_hours', type: 'number', required: false },
      { name: 'is_available', type: 'boolean', required: false },
      { name: 'allows_custom_orders', type: 'boolean', required: false },
    ]);
  });

  it('lists every machine field', () => {
    expect(rowFields(MachineRowSchema).map((f) => `${f.name}:${f.type}`)).toEqual([
      'external_id:string', 'template_id:string', 'category:string', 'manufacturer:string', 'model:string',
      'model_number:string', 'nickname:string', 'capabilities:array', 'is_skill_station:boolean',
    ]);
  });
});

describe('coerceCell', () => {
  it.each([
    ['number', '2500', 2500],
    ['number', ' 2500 ', 2500],
    ['number', '12.5', 12.5],
    ['number', '-1', -1],
    ['number', '1e3', 1000],
    ['number', '.5', 0.5],
    ['number', 'abc', 'abc'],
    ['number', '1,500', '1,500'],
    ['number', '0x10', '0x10'],
    ['number', 'Infinity', 'Infinity'],
    ['number', '12 5', '12 5'],
    ['boolean', 'true', true],
    ['boolean', 'FALSE', false],
    ['boolean', ' True ', true],
    ['boolean', 'yes', 'yes'],
    ['boolean', '1', '1'],
    ['array', 'a|b', ['a', 'b']],
    ['array', ' a | b ', ['a', 'b']],
    ['array', 'a||b|', ['a', 'b']],
    ['array', 'one', ['one']],
    ['string', ' kept as is ', ' kept as is '],
  ] as const)('%s cell %j -> %j', (type, cell, expected) => {
    expect(coerceCell({ type }, cell)).toEqual(expected);
  });

  it.each(['string', 'number', 'boolean', 'array'] as const)('an empty or blank %s cell is an absent field', (type) => {
    expect(coerceCell({ type }, '')).toBeUndefined();
    expect(coerceCell({ type }, '   ')).toBeUndefined();
    if (type === 'array') expect(coerceCell({ type }, '|')).toBeUndefined();
  });
});

describe('CSV rows through the shared schema', () => {
  const header = ['title', 'description', 'price_cents', 'currency', 'category', 'material', 'photo_urls', 'tags', 'is_available', 'color', 'note'];
  const columns = mapCsvHeader(header, listingFields, 'listings');
  const reasonOf = (cells: string[]) => validateRows(ListingRowSchema, [csvRecordToRow(columns, cells)]).errors[0]?.reason;
  const valid = ['Dragon', 'Silk PLA', '2500', 'USD', 'miniatures', 'PLA', 'https://cdn.example.test/a.jpg|https://cdn.example.test/b.jpg', 'dragon|flexi', 'TRUE', '', 'ignored'];
  const withCell = (position: number, value: string) => valid.map((cell, i) => (i === position ? value : cell));

  it('turns a good record into a valid row with typed values and no unknown or empty fields', () => {
    const row = csvRecordToRow(columns, valid);
    expect(row).toEqual({
      title: 'Dragon', description: 'Silk PLA', price_cents: 2500, currency: 'USD', category: 'miniatures', material: 'PLA',
      photo_urls: ['https://cdn.example.test/a.jpg', 'https://cdn.example.test/b.jpg'], tags: ['dragon', 'flexi'], is_available: true,
    });
    expect(validateRows(ListingRowSchema, [row]).errors).toEqual([]);
  });

  it('names unknown columns', () => {
    expect(columns.unknown).toEqual(['note']);
  });

  it.each([
    ['price_cents 12.5', 2, '12.5', 'price_cents: must be a whole number'],
    ['price_cents not a number', 2, 'twelve', 'price_cents: must be a whole number'],
    ['price_cents empty', 2, '', 'price_cents: required'],
    ['photo_urls empty', 6, '', 'photo_urls: required'],
    ['photo_urls http', 6, 'https://ok.test/a.jpg|http://bad.test/b.jpg', 'photo_urls[1]: must be an absolute https:// URL'],
    ['is_available not a boolean', 8, 'yes', 'is_available: must be true or false'],
    ['title blank', 0, '   ', 'title: required'],
  ])('%s gives the API reason', (_name, position, cell, reason) => {
    expect(reasonOf(withCell(position, cell))).toBe(reason);
  });

  it('refuses a header without any field of the kind, and duplicate columns', () => {
    expect(() => mapCsvHeader(['a', 'b'], listingFields, 'listings')).toThrow(/header naming listings fields/);
    expect(() => mapCsvHeader(['title', 'title'], listingFields, 'listings')).toThrow(/"title" twice/);
  });
});
