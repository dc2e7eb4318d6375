import { describe, expect, it } from 'vitest';
import { IdParameterSchema, KeyIdParameterSchema } from '../../../src/shared/api-schemas/id-parameter.js';

/** The one rule for every id a client sends in a path or a query (docs/imports.md#import-ids). */
describe('IdParameterSchema', () => {
  it.each([
    ['a UUID', '0b6f2c1e-3d4a-4f8e-9c7f-5a1e0d9b8c76'],
    ['one character', 'x'],
    ['64 characters', 'x'.repeat(64)],
    ['every printable ASCII character', '!"#$%&\'()*+,-./0123456789:;<=>?@AZ[\\]^_`az{|}~'],
  ])('takes %s', (_what, id) => {
    expect(IdParameterSchema.safeParse(id).success).toBe(true);
  });

  it.each([
    ['an empty id', ''],
    ['65 characters', 'x'.repeat(65)],
    ['a NUL', 'a\u0000b'],
    ['a C0 control', 'a\u001bb'],
    ['DEL', 'a\u007f'],
    ['a C1 control', '\u009b'],
    ['a right-to-left override', '\u202e'],
    ['a lone surrogate', '\ud800'],
    ['a surrogate pair', '\u{1F680}'],
    ['a character beyond ASCII', 'café'],
    ['a space', 'a b'],
  ])('refuses %s', (_what, id) => {
    expect(IdParameterSchema.safeParse(id).success).toBe(false);
  });
});

describe('KeyIdParameterSchema', () => {
  it.each([
    ['a UUID', '0b6f2c1e-3d4a-4f8e-9c7f-5a1e0d9b8c76', true],
    ['a UUID in capitals', '0B6F2C1E-3D4A-4F8E-9C7F-5A1E0D9B8C76', true],
    ['a key prefix', 'deadbeef', false],
    ['a UUID and a character more', '0b6f2c1e-3d4a-4f8e-9c7f-5a1e0d9b8c760', false],
    ['a UUID with a NUL', '0b6f2c1e-3d4a-4f8e-9c7f-5a1e0d9b8c7\u0000', false],
  ])('%s: %s', (_what, id, takes) => {
    expect(KeyIdParameterSchema.safeParse(id).success).toBe(takes);
  });
});
