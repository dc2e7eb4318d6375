import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ImportKind } from '../../../src/shared/import/import-kinds.js';
import { checkImportBody } from '../../../src/api/import/check-import-body.js';
import { isImportRefusal } from '../../../src/api/import/import-refusal.js';
import { externalIdOf } from '../../../src/shared/rows/external-id.js';
import type { RowError } from '../../../src/shared/rows/row-errors.js';
import { validListing, validMachine } from '../../support/fixtures.js';
import { rowErrorBreaks } from '../../support/hostile-rows.js';

/** A small pool of ids, so that rows share them: spelt with spaces, blank, too long, hostile, not strings. */
const idArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom('A', ' A', 'A ', 'B', 'b', 'C-1', 'é', 'e\u0301', '\u202eX', 'tab\tbed', '', '   ', 'x'.repeat(100), 'x'.repeat(101), '\ud800', null, 7, true, ['A'], { id: 'A' }),
  fc.string({ maxLength: 4 }),
);

function rowsArb(kind: ImportKind) {
  const valid = kind === 'listings' ? validListing : validMachine;
  const broken = kind === 'listings' ? { currency: 'EUR' } : { model: '' };
  const row = fc.record({ id: fc.option(idArb, { nil: undefined }), broken: fc.boolean(), notObject: fc.boolean() }).map(({ id, broken: isBroken, notObject }) =>
    notObject && isBroken ? 'not a row' : valid({ ...(id === undefined ? {} : { external_id: id }), ...(isBroken ? broken : {}) }),
  );
  return fc.array(row, { minLength: 1, maxLength: 30 });
}

/** checkImportBody's answer, or the row errors of its `no-valid-rows` refusal. */
function validate(kind: ImportKind, input: unknown[]): { rows: { external_id?: string }[]; errors: RowError[]; matchExternalIds?: boolean } {
  const checked = checkImportBody(kind, { [kind]: input });
  if (!isImportRefusal(checked)) return checked;
  if (checked.refused !== 'no-valid-rows') throw new Error(`unexpected refusal: ${checked.refused}`);
  return { rows: [], errors: checked.errors };
}

describe.each(['listings', 'machines'] as const)('external_id across the rows of one %s request', (kind) => {
  it('keeps each id once, at its first occurrence, fails every later one and echoes valid ids', () => {
    fc.assert(
      fc.property(rowsArb(kind), (input) => {
        const { rows, errors, matchExternalIds } = validate(kind, input);
        expect(rows.length + errors.length).toBe(input.length);
        expect(errors.map((e) => e.index)).toEqual([...errors.map((e) => e.index)].sort((a, b) => a - b));
        // (a 400 does not say; nothing is imported then)
        if (matchExternalIds !== undefined) expect(matchExternalIds).toBe(input.some((row) => typeof row === 'object' && row !== null && (row as Record<string, unknown>)['external_id'] != null));

        const ids = input.map(externalIdOf);
        const firstOf = new Map<string, number>();
        ids.forEach((id, index) => id !== undefined && !firstOf.has(id) && firstOf.set(id, index));
        // the written rows carry distinct ids, each stored as its first occurrence spelt it (trimmed)
        const written = rows.map((row) => row.external_id).filter((id) => id !== undefined);
        expect(new Set(written).size).toBe(written.length);
        const byIndex = new Map(errors.map((e) => [e.index, e]));
        ids.forEach((id, index) => {
          const error = byIndex.get(index);
          const repeated = id !== undefined && firstOf.get(id) !== index;
          if (repeated) expect(error?.reason).toMatch(/^external_id: appears more than once in this request(; |$)/);
          else if (error) expect(error.reason).not.toContain('appears more than once');
          if (repeated) expect(error?.details[0]).toEqual({ field: 'external_id', code: 'duplicate_external_id', message: 'appears more than once in this request' });
          if (error) expect(error.external_id).toBe(id);
          if (error) expect(rowErrorBreaks(error, input[index]), error.reason).toEqual([]);
        });
      }),
      { numRuns: 2_000 },
    );
  });
});
