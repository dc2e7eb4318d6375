import fc from 'fast-check';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { arrayEntries } from '../../../../src/shared/import/file/csv-cells.js';
import { FileNotUtf8Error, FileRecordTooLongError } from '../../../../src/shared/import/file/file-read-error.js';
import { readCsvRows } from '../../../../src/shared/import/file/read-csv.js';
import { readNdjsonRows } from '../../../../src/shared/import/file/read-ndjson.js';
import { rowFields } from '../../../../src/shared/import/file/row-fields.js';
import type { SourceRow } from '../../../../src/shared/import/file/source-row.js';
import { ListingRowSchema } from '../../../../src/shared/rows/listing-row.js';
import { streamOf } from './chunked-stream.js';

/**
 * The readers' bounds (docs/imports.md#whole-files): an NDJSON line past the row bound fails as its
 * row, unparsed, and the file reads on; a CSV record past it stops the file; an array cell is
 * never split past its field's cap.
 */

async function collect(rows: AsyncIterable<SourceRow>): Promise<SourceRow[]> {
  const out: SourceRow[] = [];
  for await (const row of rows) out.push(row);
  return out;
}

/** `total` bytes of `fill`, in chunks of 64 KiB, made as they are read: never held whole. */
function repeated(prefix: string, fill: string, total: number, suffix = ''): Readable {
  const piece = Buffer.from(fill.repeat(Math.ceil(65_536 / fill.length)));
  let sent = 0;
  let stage: 'prefix' | 'fill' | 'suffix' | 'done' = 'prefix';
  return new Readable({
    read() {
      if (stage === 'prefix') {
        stage = 'fill';
        this.push(Buffer.from(prefix));
      } else if (stage === 'fill') {
        const next = piece.subarray(0, Math.min(piece.length, total - sent));
        sent += next.length;
        if (sent >= total) stage = 'suffix';
        this.push(next);
      } else if (stage === 'suffix') {
        stage = 'done';
        this.push(Buffer.from(suffix));
      } else this.push(null);
    },
  });
}

describe('readNdjsonRows: the line bound', () => {
  it('fails a line past the bound as its row, at its line, and reads the lines after it', async () => {
    const rows = await collect(readNdjsonRows(streamOf(`{"a":1}\n${'x'.repeat(300)}\n{"a":2}\r\n{"a":3}`, 7), { maxLineBytes: 100 }));
    expect(rows).toEqual([
      { location: 1, value: { a: 1 } },
      { location: 2, error: 'line longer than 100 bytes' },
      { location: 3, value: { a: 2 } },
      { location: 4, value: { a: 3 } },
    ]);
  });

  it('drops a 40 MB line as it arrives, with the default bound of 1 MiB, and counts the lines after it', async () => {
    const before = process.memoryUsage().rss;
    const rows = await collect(readNdjsonRows(repeated('{"a":[', '{},', 40 * 1024 * 1024, ']}\n{"a":1}\n')));
    expect(rows).toEqual([
      { location: 1, error: 'line longer than 1048576 bytes' },
      { location: 2, value: { a: 1 } },
    ]);
    // note: a bound, not a measurement: the line would take 40 MB as text, and JSON.parse of it some 850 MB
    expect(process.memoryUsage().rss - before).toBeLessThan(30 * 1024 * 1024);
  });

  it('counts a line at the bound as a row and one byte more as too long, multi-byte characters by their bytes', async () => {
    const line = (bytes: number) => `{"t":"${'é'.repeat((bytes - 8) / 2)}"}`;
    expect(Buffer.byteLength(line(100))).toBe(100);
    const rows = await collect(readNdjsonRows(streamOf(`${line(100)}\n${line(102)}\n`, 5), { maxLineBytes: 100 }));
    expect(rows.map((row) => ('error' in row ? row.error : 'row'))).toEqual(['row', 'line longer than 100 bytes']);
  });

  it('stops at bytes that are not UTF-8', async () => {
    const bytes = Buffer.concat([Buffer.from('{"a":1}\n{"a":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}\n')]);
    await expect(collect(readNdjsonRows(Readable.from([bytes])))).rejects.toBeInstanceOf(FileNotUtf8Error);
  });

  it('reads any file as a split on its line breaks does, whatever the chunks (LF, CRLF, lone CR, blank lines, a BOM)', async () => {
    const line = fc.oneof(fc.constant(''), fc.constant('  '), fc.json({ maxDepth: 1 }), fc.constant('{"a":"é€😀"}'), fc.constant('{bad'));
    const eol = fc.constantFrom('\n', '\r\n', '\r');
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(line, eol), { maxLength: 12 }), fc.boolean(), fc.integer({ min: 1, max: 9 }), async (lines, bom, chunkSize) => {
        const text = (bom ? '\uFEFF' : '') + lines.map(([content, end]) => content + end).join('');
        // note: the reference is the split itself: a CR ending a line before an empty one ending
        // in LF is a CRLF, one break, in the file as in the split.
        const parts = text.replace(/^\uFEFF/, '').split(/\r\n|\r|\n/);
        if (parts.at(-1) === '') parts.pop();
        const expected: SourceRow[] = [];
        parts.forEach((content, n) => {
          if (content.trim() === '') return;
          try {
            expected.push({ location: n + 1, value: JSON.parse(content) as unknown });
          } catch (error) {
            expected.push({ location: n + 1, error: `invalid JSON: ${(error as Error).message}` });
          }
        });
        expect(await collect(readNdjsonRows(streamOf(text, chunkSize)))).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });
});

const fields = rowFields(ListingRowSchema);

describe('readCsvRows: the record bound', () => {
  const csv = (input: Readable, maxRecordBytes?: number) =>
    collect(readCsvRows(input, { fields, kind: 'listings', ...(maxRecordBytes === undefined ? {} : { maxRecordBytes }) }));

  it('stops the file at a record of commas past 1 MiB, naming its line, before csv-parse holds it', async () => {
    const read = csv(repeated('title,price_cents\nLamp,100\n', ',', 50 * 1024 * 1024, '\n'));
    const error = await read.then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(FileRecordTooLongError);
    expect((error as Error).message).toBe('a CSV record longer than 1048576 bytes starts on line 3');
  });

  it('counts a quoted cell\'s line breaks inside its record, and starts over after each record', async () => {
    const record = (cell: string) => `"${cell}",1\n`;
    const withinBound = `title,price_cents\n${record('a'.repeat(40))}${record('b\n'.repeat(20))}`;
    expect(await csv(streamOf(withinBound, 3), 64)).toHaveLength(2);
    await expect(csv(streamOf(`title,price_cents\n${record('b\n'.repeat(40))}`, 3), 64)).rejects.toThrow('a CSV record longer than 64 bytes starts on line 2');
  });

  it('stops at bytes that are not UTF-8', async () => {
    const bytes = Buffer.concat([Buffer.from('title,price_cents\n'), Buffer.from([0xff]), Buffer.from(',1\n')]);
    await expect(csv(Readable.from([bytes]))).rejects.toBeInstanceOf(FileNotUtf8Error);
  });
});

describe('arrayEntries: an array cell split no further than its cap', () => {
  it.each([
    ['a|b|c', undefined, ['a', 'b', 'c']],
    [' a | | b |', undefined, ['a', 'b']],
    ['a|b|c|d', 2, ['a', 'b', 'c']],
    ['||||a||b', 1, ['a', 'b']],
  ])('%j with cap %s', (cell, cap, expected) => {
    expect(arrayEntries(cell, cap)).toEqual(expected);
  });

  it('stops a cell of a million separators after one entry past the cap', () => {
    const cell = 'x|'.repeat(1_000_000);
    expect(arrayEntries(cell, 100)).toHaveLength(101);
  });

  it('gives the row check one entry past a field\'s cap, so that the row fails naming it', () => {
    const tags = Array.from({ length: 5_000 }, (_, n) => `t${n}`).join('|');
    const result = ListingRowSchema.safeParse({ tags: arrayEntries(tags, fields.find((field) => field.name === 'tags')!.maxEntries) });
    expect(result.success).toBe(false);
    expect(result.error!.issues.find((issue) => issue.path[0] === 'tags')?.message).toBe('at most 100 entries');
  });
});
