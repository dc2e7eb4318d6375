import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { holdsRawControl, RAW_CONTROL } from '../../src/api/export/raw-control.js';

/** Bytes weighted towards the ones that matter: every control, the separators, UTF-8's high bytes. */
const byte = fc.oneof(fc.integer({ min: 0, max: 0x20 }), fc.constantFrom(0x09, 0x0a, 0x5c, 0x80, 0x9f, 0xe2, 0xff), fc.integer({ min: 0, max: 0xff }));

describe('holdsRawControl (the export looks for what JSON must escape)', () => {
  it('finds a raw control character wherever it lies, at any alignment, as a regular expression over the same bytes does', () => {
    fc.assert(
      fc.property(fc.array(byte, { maxLength: 40 }), fc.nat({ max: 7 }), (values, offset) => {
        // note: a view that starts `offset` bytes into its memory, as a batch cut from postgres.js's buffers does
        const bytes = Buffer.from([...Array<number>(offset).fill(0x41), ...values]).subarray(offset);
        expect(holdsRawControl(bytes)).toBe(RAW_CONTROL.test(bytes.toString('latin1')));
      }),
      { numRuns: 2_000 },
    );
  });

  it('passes a batch whose only controls are COPY\'s separators and long text of any language', () => {
    const line = Buffer.from('id\ttitle é 𝄞 ü\t\\n\\t\\r\\b\\f\\v\tdesc\n'.repeat(500));
    expect(holdsRawControl(line)).toBe(false);
    line[777] = 0x1b;
    expect(holdsRawControl(line)).toBe(true);
  });
});
