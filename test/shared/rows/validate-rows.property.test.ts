import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IMPORT_KINDS, type ImportKind } from '../../../src/shared/import/import-kinds.js';
import { checkImportBody } from '../../../src/api/import/check-import-body.js';
import { isImportRefusal } from '../../../src/api/import/import-refusal.js';
import { ListingRowSchema } from '../../../src/shared/rows/listing-row.js';
import { validateRows } from '../../../src/shared/rows/validate-rows.js';
import type { RowError } from '../../../src/shared/rows/row-errors.js';
import { validListing, validMachine } from '../../support/fixtures.js';
import { LISTING_FIELDS, MACHINE_FIELDS, SERVER_OWNED_FIELDS, anyFieldValue, rowArbitraries, rowErrorBreaks, isStoredHttpsUrl, STORED_SCHEMAS, RULES } from '../../support/hostile-rows.js';

/** Property tests of row validation, without HTTP; the HTTP side is test/api/hostile-input.test.ts. */
describe('row validation (validateRows)', () => {
  describe.each<[ImportKind, number]>([
    ['listings', 3_000],
    ['machines', 3_000],
  ])('%s rows', (kind, numRuns) => {
    const schema = IMPORT_KINDS[kind].rowSchema;
    const { rows: rowsArb } = rowArbitraries(kind, anyFieldValue);

    it('never throws, and partitions the indices into valid rows (in order) and sorted errors', () => {
      fc.assert(
        fc.property(rowsArb, (input) => {
          const { rows, errors } = validateRows(schema, input);
          expect(rows.length + errors.length).toBe(input.length);
          const failing = errors.map((e) => e.index);
          expect(failing).toEqual([...new Set(failing)].sort((a, b) => a - b));
          expect(failing.every((i) => Number.isInteger(i) && i >= 0 && i < input.length)).toBe(true);
          expect(errors.every((e) => typeof e.reason === 'string' && e.reason.length > 0)).toBe(true);
          // The valid rows are exactly the other indices, in request order.
          const passing = input.map((_, i) => i).filter((i) => !failing.includes(i));
          expect(passing.map((i) => validateRows(schema, [input[i]]).rows[0])).toEqual(rows);
        }),
        { numRuns },
      );
    });

    it('gives every failing row details: its reason field by field, in order, each with the code its message stands for', () => {
      fc.assert(
        fc.property(rowsArb, (input) => {
          for (const error of validateRows(schema, input).errors) expect(rowErrorBreaks(error, input[error.index]), error.reason).toEqual([]);
        }),
        { numRuns },
      );
    });

    it('yields only rows that satisfy the stored-row schema and the database rules', () => {
      fc.assert(
        fc.property(rowsArb, (input) => {
          for (const row of validateRows(schema, input).rows) {
            expect(STORED_SCHEMAS[kind].safeParse(row).success).toBe(true);
            expect(RULES[kind](row as Record<string, unknown>)).toEqual([]);
          }
        }),
        { numRuns },
      );
    });

    if (kind === 'listings') {
      it('keeps only photo URLs that read as https:// URLs to any consumer, not only to the WHATWG parser', () => {
        fc.assert(
          fc.property(rowsArb, (input) => {
            for (const row of validateRows(ListingRowSchema, input).rows) {
              expect(row.photo_urls.filter((url) => !isStoredHttpsUrl(url))).toEqual([]);
            }
          }),
          { numRuns },
        );
      });
    }

    it('names only the replaced field in the reason when one field of a valid row is replaced, and ignores unknown fields', () => {
      const base: Record<string, unknown> = kind === 'listings' ? validListing() : validMachine();
      const baseline = validateRows(schema, [base]).rows;
      const fields: readonly string[] = kind === 'listings' ? LISTING_FIELDS : MACHINE_FIELDS;
      fc.assert(
        fc.property(fc.constantFrom(...fields, ...SERVER_OWNED_FIELDS), anyFieldValue, fc.boolean(), (field, value, remove) => {
          const row = { ...base };
          if (remove) delete row[field];
          else row[field] = value;
          const { rows, errors } = validateRows(schema, [row]);
          if (!fields.includes(field)) {
            expect(rows).toEqual(baseline);
            return;
          }
          for (const { reason } of errors) {
            for (const part of reason.split('; ')) expect(part.startsWith(`${field}:`) || part.startsWith(`${field}[`), reason).toBe(true);
          }
        }),
        { numRuns },
      );
    });
  });

  it('checkImportBody either returns a partition of the rows or refuses the body', () => {
    const listings = rowArbitraries('listings', anyFieldValue);
    const machines = rowArbitraries('machines', anyFieldValue);
    const bodyArb = fc.oneof(
      fc.anything({ maxDepth: 3 }),
      fc.record({ listings: fc.oneof(listings.rows, fc.anything({ maxDepth: 2 })) }),
      fc.record({ machines: fc.oneof(machines.rows, fc.anything({ maxDepth: 2 })) }),
    );
    fc.assert(
      fc.property(fc.constantFrom<ImportKind>('listings', 'machines'), bodyArb, (kind, body) => {
        const result = checkImportBody(kind, body);
        if (!isImportRefusal(result)) {
          expect(result.rows.length).toBeGreaterThan(0);
          expect(result.rows.length + result.errors.length).toBe(result.total);
          const rows = (body as Record<string, unknown[]>)[kind]!;
          for (const error of result.errors) expect(rowErrorBreaks(error, rows[error.index]), error.reason).toEqual([]);
          return;
        }
        expect(result.refused).not.toBe('invalid-json');
        // "no valid rows" carries the same entries as a 201
        const errors: RowError[] = result.refused === 'no-valid-rows' ? result.errors : [];
        if (result.refused === 'no-valid-rows') expect(errors.length).toBeGreaterThan(0);
        for (const entry of errors) expect(rowErrorBreaks(entry, (body as Record<string, unknown[]>)[kind]![entry.index]), entry.reason).toEqual([]);
      }),
      { numRuns: 3_000 },
    );
  });
});
