import { describe, expect, it } from 'vitest';
import { MachineRowSchema, type MachineRow } from '../../../src/shared/rows/machine-row.js';
import { validateRows } from '../../../src/shared/rows/validate-rows.js';
import { MACHINE_DEFAULTS, validMachine } from '../../support/fixtures.js';
import { rowError } from '../../support/row-errors.js';

const DRAGON = '\u{1F409}'; // one code point, two UTF-16 units

function machineWithout(field: string): Record<string, unknown> {
  const row: Record<string, unknown> = validMachine();
  delete row[field];
  return row;
}

/** The reason of a single failing row; fails the test when the row is valid. */
function reasonFor(row: unknown): string {
  const { rows, errors } = validateRows(MachineRowSchema, [row]);
  expect(rows).toEqual([]);
  expect(errors).toHaveLength(1);
  expect(errors[0]?.index).toBe(0);
  return errors[0]?.reason ?? '';
}

/** The normalised row of a single valid row; fails the test when the row is invalid. */
function accepted(row: unknown): MachineRow {
  const { rows, errors } = validateRows(MachineRowSchema, [row]);
  expect(errors).toEqual([]);
  expect(rows).toHaveLength(1);
  return rows[0] as MachineRow;
}

const REQUIRED_FIELDS = ['template_id', 'category', 'manufacturer', 'model'] as const;

describe('machine rows (MachineRowSchema through validateRows)', () => {
  describe('invalid rows and their reasons', () => {
    it.each(REQUIRED_FIELDS.flatMap((field): [string, Record<string, unknown>, string][] => [
      [`${field} missing`, machineWithout(field), `${field}: required`],
      [`${field} null`, validMachine({ [field]: null }), `${field}: required`],
      [`${field} empty`, validMachine({ [field]: '' }), `${field}: required`],
      [`${field} only whitespace`, validMachine({ [field]: ' \t\n ' }), `${field}: required`],
      [`${field} a number`, validMachine({ [field]: 4 }), `${field}: must be a string`],
      [`${field} a boolean`, validMachine({ [field]: false }), `${field}: must be a string`],
      [`${field} an array`, validMachine({ [field]: ['x'] }), `${field}: must be a string`],
      [`${field} with a NUL`, validMachine({ [field]: 'a\u0000b' }), `${field}: must not contain NUL characters`],
    ]))('%s', (_case, row, reason) => {
      expect(reasonFor(row)).toBe(reason);
    });

    it.each<[string, Record<string, unknown>, string]>([
      ['category of 81 characters', validMachine({ category: 'c'.repeat(81) }), 'category: must be at most 80 characters'],
      ['category of 81 emoji', validMachine({ category: DRAGON.repeat(81) }), 'category: must be at most 80 characters'],
      ['model_number a number', validMachine({ model_number: 1234 }), 'model_number: must be a string'],
      ['model_number with a NUL', validMachine({ model_number: 'MK\u00004' }), 'model_number: must not contain NUL characters'],
      ['nickname a number', validMachine({ nickname: 7 }), 'nickname: must be a string'],
      ['nickname with a NUL', validMachine({ nickname: 'Big\u0000Bertha' }), 'nickname: must not contain NUL characters'],
      ['capabilities a non-string entry', validMachine({ capabilities: ['fdm', 2] }), 'capabilities[1]: must be a string'],
      ['capabilities a null entry', validMachine({ capabilities: [null] }), 'capabilities[0]: must be a string'],
      ['capabilities an object entry', validMachine({ capabilities: ['fdm', 'resin', { name: 'cnc' }] }), 'capabilities[2]: must be a string'],
      ['capabilities a string', validMachine({ capabilities: 'fdm' }), 'capabilities: must be an array of strings'],
      ['capabilities an entry with a NUL', validMachine({ capabilities: ['\u0000'] }), 'capabilities[0]: must not contain NUL characters'],
      // row sizes (docs/rows.md#row-sizes)
      ['template_id of 201 characters', validMachine({ template_id: 't'.repeat(201) }), 'template_id: must be at most 200 characters'],
      ['manufacturer of 201 emoji', validMachine({ manufacturer: DRAGON.repeat(201) }), 'manufacturer: must be at most 200 characters'],
      ['model of 201 characters', validMachine({ model: 'm'.repeat(201) }), 'model: must be at most 200 characters'],
      ['model_number of 201 characters', validMachine({ model_number: '9'.repeat(201) }), 'model_number: must be at most 200 characters'],
      ['101 capabilities', validMachine({ capabilities: Array.from({ length: 101 }, (_, i) => `cap-${i}`) }), 'capabilities: at most 100 entries'],
      ['200,000 capabilities', validMachine({ capabilities: Array<string>(200_000).fill('x') }), 'capabilities: at most 100 entries'],
      ['a capability of 81 characters', validMachine({ capabilities: ['fdm', 'c'.repeat(81)] }), 'capabilities[1]: must be at most 80 characters'],
      ['is_skill_station "true"', validMachine({ is_skill_station: 'true' }), 'is_skill_station: must be true or false'],
      ['is_skill_station 1', validMachine({ is_skill_station: 1 }), 'is_skill_station: must be true or false'],
    ])('%s', (_case, row, reason) => {
      expect(reasonFor(row)).toBe(reason);
    });

    it.each<[string, unknown]>([
      ['null', null],
      ['an array', [validMachine()]],
      ['an empty array', []],
      ['a number', 3],
      ['a string', 'tpl-1,fdm,Prusa,MK4'],
      ['a boolean', false],
    ])('a row that is %s fails with "row must be an object"', (_case, row) => {
      expect(reasonFor(row)).toBe('row must be an object');
    });

    it('names every failing field of a row exactly once', () => {
      const parts = reasonFor({
        template_id: 12,
        category: 'c'.repeat(200),
        manufacturer: '   ',
        model: 'MK4',
        nickname: false,
        capabilities: ['fdm', 1, 'resin', null],
        is_skill_station: 'no',
      }).split('; ');
      expect(parts.sort()).toEqual([
        'capabilities[1]: must be a string',
        'capabilities[3]: must be a string',
        'category: must be at most 80 characters',
        'is_skill_station: must be true or false',
        'manufacturer: required',
        'nickname: must be a string',
        'template_id: must be a string',
      ]);
    });

    it('names every required field of an empty object', () => {
      expect(reasonFor({}).split('; ').sort()).toEqual([
        'category: required', 'manufacturer: required', 'model: required', 'template_id: required',
      ]);
    });
  });

  describe('valid rows and how they are stored', () => {
    it('applies the defaults when optional fields are absent', () => {
      const minimal = { template_id: 'tpl-1', category: 'fdm', manufacturer: 'Prusa Research', model: 'MK4' };
      expect(accepted(minimal)).toStrictEqual({ ...minimal, ...MACHINE_DEFAULTS });
    });

    it('stores the whole normalised row, trimmed, and drops unknown fields', () => {
      const row = accepted({
        template_id: ' tpl-7 ',
        category: ' resin ',
        manufacturer: ' Elegoo ',
        model: ' Saturn 3 ',
        model_number: ' EL-3D-S3 ',
        nickname: ' Big Bertha ',
        capabilities: ['msla', '12k'],
        is_skill_station: true,
        // unknown or server-owned fields
        verification_status: 'verified',
        account_id: '00000000-0000-4000-8000-000000000000',
        id: 'x',
        serial: 'S-1',
      });
      expect(row).toStrictEqual({
        template_id: 'tpl-7',
        category: 'resin',
        manufacturer: 'Elegoo',
        model: 'Saturn 3',
        model_number: 'EL-3D-S3',
        nickname: 'Big Bertha',
        capabilities: ['msla', '12k'],
        is_skill_station: true,
      });
    });

    it('keeps is_skill_station false when sent', () => {
      expect(accepted(validMachine({ is_skill_station: false })).is_skill_station).toBe(false);
    });

    it('accepts any category of at most 80 characters, counted in code points after trimming', () => {
      expect(accepted(validMachine({ category: 'c'.repeat(80) })).category).toBe('c'.repeat(80));
      expect(accepted(validMachine({ category: DRAGON.repeat(80) })).category).toBe(DRAGON.repeat(80));
      expect(accepted(validMachine({ category: `   ${'c'.repeat(80)}   ` })).category).toBe('c'.repeat(80));
      expect(accepted(validMachine({ category: 'laser-cutter' })).category).toBe('laser-cutter');
    });

    it('keeps every capability up to 100 of up to 80 characters', () => {
      const capabilities = Array.from({ length: 100 }, (_, i) => `${i}`.padEnd(80, 'c'));
      expect(accepted(validMachine({ capabilities })).capabilities).toEqual(capabilities);
    });

    it('keeps template_id, manufacturer, model and model_number of up to 200 characters whole', () => {
      const long = 'm'.repeat(200);
      const row = accepted(validMachine({ template_id: long, manufacturer: long, model: long, model_number: `  ${long}  ` }));
      expect([row.template_id, row.manufacturer, row.model, row.model_number]).toEqual([long, long, long, long]);
    });
  });

  describe('nickname stored length (80 code points, trimmed first)', () => {
    it('keeps a nickname of exactly 80 characters whole', () => {
      expect(accepted(validMachine({ nickname: 'n'.repeat(80) })).nickname).toBe('n'.repeat(80));
    });

    it('cuts a longer nickname to 80 characters', () => {
      expect(accepted(validMachine({ nickname: 'n'.repeat(81) })).nickname).toBe('n'.repeat(80));
    });

    it('counts in code points: 80 emoji are kept whole', () => {
      const nickname = accepted(validMachine({ nickname: DRAGON.repeat(90) })).nickname;
      expect(nickname).toBe(DRAGON.repeat(80));
      expect(nickname).toHaveLength(160);
    });

    it('never splits an emoji straddling the limit', () => {
      expect(accepted(validMachine({ nickname: `${'n'.repeat(79)}${DRAGON}${DRAGON}` })).nickname).toBe(`${'n'.repeat(79)}${DRAGON}`);
      expect(accepted(validMachine({ nickname: `${'n'.repeat(80)}${DRAGON}` })).nickname).toBe('n'.repeat(80));
    });

    it('trims before cutting', () => {
      expect(accepted(validMachine({ nickname: `\t   ${'n'.repeat(80)}  ` })).nickname).toBe('n'.repeat(80));
      expect(accepted(validMachine({ nickname: `     ${'n'.repeat(80)}zz` })).nickname).toBe('n'.repeat(80));
    });
  });

  describe('a batch of rows', () => {
    it('returns the valid rows in request order and the errors sorted by index', () => {
      const input = [
        'not a row',
        validMachine({ template_id: 'first' }),
        validMachine({ model: '' }),
        validMachine({ template_id: 'second' }),
        null,
        validMachine({ is_skill_station: 'true' }),
      ];
      const { rows, errors } = validateRows(MachineRowSchema, input);
      expect(rows.map((row) => row.template_id)).toEqual(['first', 'second']);
      expect(errors).toEqual([
        rowError(0, 'row must be an object', 'not_an_object'),
        rowError(2, 'model: required', 'required'),
        rowError(4, 'row must be an object', 'not_an_object'),
        rowError(5, 'is_skill_station: must be true or false', 'wrong_type'),
      ]);
    });
  });
});
