import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ExportColumn } from '../../src/shared/repositories/catalogue-export.js';
import { ndjsonRows } from '../../src/api/export/export-ndjson.js';
import { readCopyText } from '../../src/api/export/copy-text.js';
import { useTestPool } from '../support/database-with-account.js';

/**
 * The export's NDJSON encoder (export-ndjson.ts) reads PostgreSQL's COPY text and translates its
 * escapes in place. Whatever a stored value holds, each line must be what JSON.stringify writes for
 * the row as the list reads it: text byte for byte, numbers, booleans, arrays, times and nulls.
 * The COPY text comes from a real PostgreSQL, so that the encoder is held to what it really sends.
 */
describe('the export as NDJSON, from real COPY text', () => {
  const db = useTestPool(2);

  const COLUMNS: ExportColumn[] = [
    { name: 't', type: 'text' },
    { name: 'n', type: 'number' },
    { name: 'b', type: 'boolean' },
    { name: 'j', type: 'json' },
    { name: 'at', type: 'time' },
  ];

  /** Text with every character COPY or JSON escapes, and some neither does. note: PostgreSQL's text holds no NUL. */
  const awkwardText = fc.oneof(
    fc.string({ unit: 'binary' }).map((text) => text.replaceAll('\0', '')),
    fc
      .array(fc.constantFrom('\\', '\\v', '\\\\t', '\t', '\n', '\r', '\b', '\f', '\v', '\x01', '\x1b', '\x1f', '\x7f', '"', '\\N', 'a', 'é', '𝄞', '\u2028', '{', ','), { maxLength: 14 })
      .map((parts) => parts.join('')),
  );

  const row = fc.record({
    t: fc.option(awkwardText),
    n: fc.option(fc.double()),
    b: fc.option(fc.boolean()),
    j: fc.option(fc.array(awkwardText, { maxLength: 4 })),
    at: fc.option(fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true })),
  });
  type Row = typeof row extends fc.Arbitrary<infer R> ? R : never;

  /** The row as the list answers it: what postgres.js reads, through JSON.stringify. */
  const expectedLine = (value: Row, storedAt: Date | null): string =>
    JSON.stringify({
      t: value.t,
      n: value.n,
      b: value.b,
      j: value.j,
      at: storedAt === null ? null : storedAt.toISOString(),
    });

  async function exported(rows: Row[]): Promise<{ lines: string[]; storedAt: (Date | null)[] }> {
    return db.sql.begin(async (tx) => {
      await tx.unsafe("set local timezone to 'UTC'");
      await tx`create temporary table exported (ord int, t text, n double precision, b boolean, j text[], at timestamptz) on commit drop`;
      for (const [ord, value] of rows.entries()) {
        await tx`insert into exported values (${ord}, ${value.t}, ${value.n}, ${value.b}, ${value.j === null ? null : tx.array(value.j)}, ${value.at})`;
      }
      const storedAt = (await tx<{ at: Date | null }[]>`select at from exported order by ord`).map(({ at }) => at);
      const copy = await tx.unsafe('copy (select t, n, b, array_to_json(j), at from exported order by ord) to stdout').readable();
      let text = '';
      await pipeline(readCopyText(copy, ndjsonRows(COLUMNS)), new Writable({ write(chunk: Buffer, _encoding, done) { text += chunk.toString(); done(); } }));
      return { lines: text.split('\n').slice(0, -1), storedAt };
    });
  }

  /**
   * note: a number is compared as the number it reads as: PostgreSQL and JavaScript write some
   * alike but not byte for byte (`1e-05` and `1e-5`); text, arrays and times are compared as text.
   */
  const withoutNumber = (line: string) => line.replace(/"n":[^,]*,/, '"n":…,');

  it('writes every row as JSON.stringify writes it, whatever its text holds', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(row, { minLength: 1, maxLength: 8 }), async (rows) => {
        const { lines, storedAt } = await exported(rows);
        const expected = rows.map((value, i) => expectedLine(value, storedAt[i]!));
        expect(lines.map(withoutNumber)).toEqual(expected.map(withoutNumber));
        expect(lines.map((line) => JSON.parse(line) as unknown)).toEqual(expected.map((line) => JSON.parse(line) as unknown));
      }),
      { numRuns: 150 },
    );
  });

  it('writes rows that cross batches whole, each once, in order', async () => {
    const long = 'x"\\\t\n'.repeat(20_000);
    const rows: Row[] = Array.from({ length: 30 }, (_, i) => ({ t: `${i}${long}`, n: i, b: i % 2 === 0, j: [long.slice(0, i)], at: null }));
    const { lines, storedAt } = await exported(rows);
    expect(lines).toEqual(rows.map((value, i) => expectedLine(value, storedAt[i]!)));
  });
});

describe('the export as NDJSON, from COPY text it does not expect', () => {
  it('ends the rows with an error, rather than reading on into the next line, when a line has fewer fields than columns', async () => {
    const columns: ExportColumn[] = [{ name: 'a', type: 'text' }, { name: 'b', type: 'text' }, { name: 'c', type: 'text' }];
    const copy = Readable.from([Buffer.from('1\t2\t3\n4\t5\n6\t7\t8\n')]);
    const written: Buffer[] = [];
    const sink = new Writable({ write(chunk: Buffer, _encoding, done) { written.push(chunk); done(); } });
    await expect(pipeline(readCopyText(copy, ndjsonRows(columns)), sink)).rejects.toThrow('fewer fields than the export has columns');
    expect(written).toEqual([]);
  });
});
