import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ImportKind } from '../../../src/shared/import/import-kinds.js';
import { ListingRowSchema, type ListingRow } from '../../../src/shared/rows/listing-row.js';
import { MachineRowSchema, type MachineRow } from '../../../src/shared/rows/machine-row.js';
import { ROW_COLUMNS } from '../../../src/shared/rows/row-columns.js';
import { writeImport } from '../../../src/worker/write-import.js';
import { insertAccount, useTestPool } from '../../support/database-with-account.js';
import { encodeRowsAs, type RowsEncoding } from '../../support/encode-rows.js';
import { validListing, validMachine } from '../../support/fixtures.js';

/**
 * The rows `COPY` text carries (copy-rows.ts) are stored exactly as the same rows sent as JSON:
 * text with every character `COPY` or an array literal treats specially, empty and absent
 * values, booleans and numbers. Each case writes the same rows both ways, into two accounts, and
 * compares every column PostgreSQL stored.
 */
describe('rows as COPY text', () => {
  const db = useTestPool(4);

  /** Text made of the characters that mean something to COPY or to an array literal, and some that do not. */
  const awkwardText = fc
    .array(fc.constantFrom('\\', '\t', '\n', '\r', '"', ',', '{', '}', ' ', 'NULL', '\\N', "'", 'a', 'é', '𝄞', '\u2028', '\\\\t'), { minLength: 1, maxLength: 12 })
    .map((parts) => `x${parts.join('')}`); // note: a leading letter keeps required text from trimming to nothing

  async function storedBothWays<Row extends ListingRow | MachineRow>(kind: ImportKind, rows: Row[]): Promise<Record<RowsEncoding, unknown[]>> {
    const columns = Object.keys(ROW_COLUMNS[kind]);
    const stored = {} as Record<RowsEncoding, unknown[]>;
    for (const encoding of ['json', 'copy'] as const) {
      const accountId = await insertAccount(db.sql, `Copier ${encoding}`);
      const result = await writeImport(db.sql, {
        importId: randomUUID(), kind, accountId, requestId: 'copy-rows-test', total: rows.length, errors: [], rowCount: rows.length,
        rows: encodeRowsAs(encoding, kind, rows), matchExternalIds: rows.some((row) => row.external_id),
      });
      expect(result.inserted).toBe(rows.length);
      // note: ids made in one millisecond need not follow the insert's order; the rows' own text does.
      const written = await db.sql<Record<string, unknown>[]>`select ${db.sql(columns)} from ${db.sql(kind)} where account_id = ${accountId}`;
      stored[encoding] = [...written].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    }
    return stored;
  }

  it('stores listings with awkward text, arrays, nulls and numbers as their JSON would', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            title: awkwardText,
            description: awkwardText,
            material: awkwardText,
            color: fc.option(awkwardText),
            tags: fc.option(fc.array(awkwardText, { maxLength: 4 })),
            photo_urls: fc.array(awkwardText.map((text) => `https://img.example/${encodeURIComponent(text)}`), { minLength: 1, maxLength: 3 }),
            print_time_hours: fc.option(fc.double({ min: 0, max: 1e6, noNaN: true })),
            price_cents: fc.integer({ min: 0, max: 1_000_000 }),
            is_available: fc.boolean(),
            external_id: fc.option(fc.uuid()),
          }),
          { minLength: 1, maxLength: 5 },
        ),
        async (inputs) => {
          const rows = inputs.map((input) => ListingRowSchema.parse(validListing(input)));
          const stored = await storedBothWays('listings', rows);
          expect(stored.copy).toEqual(stored.json);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('stores machines, their capabilities and an absent nickname as their JSON would', async () => {
    const rows = [
      MachineRowSchema.parse(validMachine({ nickname: 'tab\there, new\nline, back\\slash', capabilities: ['a,b', '{c}', '"q"', 'NULL', 'back\\slash'] })),
      MachineRowSchema.parse(validMachine({ nickname: null, capabilities: [], is_skill_station: true })),
    ];
    const stored = await storedBothWays('machines', rows);
    expect(stored.copy).toEqual(stored.json);
    expect(stored.copy).toContainEqual(expect.objectContaining({ nickname: 'tab\there, new\nline, back\\slash', capabilities: ['a,b', '{c}', '"q"', 'NULL', 'back\\slash'] }));
    expect(stored.copy).toContainEqual(expect.objectContaining({ nickname: null, capabilities: [] }));
  });
});
