import fc from 'fast-check';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { cutNdjsonLines, type NdjsonPart } from '../../../../src/shared/import/file/cut-ndjson-lines.js';
import { FileNotUtf8Error } from '../../../../src/shared/import/file/file-read-error.js';
import { NdjsonLines } from '../../../../src/shared/import/file/ndjson-lines.js';
import { readNdjsonRows } from '../../../../src/shared/import/file/read-ndjson.js';
import type { SourceRow } from '../../../../src/shared/import/file/source-row.js';

const MAX_LINE_BYTES = 24;

/** What a read gave: its rows without their locations (a block's count from its own start), and whether it stopped at bytes that are not UTF-8. */
type Read = { rows: Omit<SourceRow, 'location'>[]; notUtf8: boolean };
const withoutLocation = ({ location: _location, ...row }: SourceRow) => row;

/** The bytes in chunks cut at the given positions. */
export function chunked(bytes: Buffer, cuts: number[]): Readable {
  const at = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let start = 0;
  for (const cut of [...at, bytes.length]) {
    if (cut > start) chunks.push(bytes.subarray(start, cut));
    start = Math.max(start, cut);
  }
  return Readable.from(chunks);
}

async function readInOneStage(input: Readable): Promise<Read> {
  const rows: Read['rows'] = [];
  try {
    for await (const row of readNdjsonRows(input, { maxLineBytes: MAX_LINE_BYTES })) rows.push(withoutLocation(row));
  } catch (error) {
    if (error instanceof FileNotUtf8Error) return { rows, notUtf8: true };
    throw error;
  }
  return { rows, notUtf8: false };
}

/** The parts cut, grouped `groupSizes` at a time, each group read by a reader of its own, as the preparing threads read blocks. */
async function readInTwoStages(input: Readable, groupSizes: number[]): Promise<Read> {
  const parts: NdjsonPart[] = [];
  for await (const part of cutNdjsonLines(input, { maxLineBytes: MAX_LINE_BYTES })) parts.push(part);
  const rows: Read['rows'] = [];
  let group = 0;
  for (let start = 0; start < parts.length; group += 1) {
    const end = start + Math.max(1, groupSizes[group % Math.max(1, groupSizes.length)] ?? 1);
    const lines = new NdjsonLines(start === 0, MAX_LINE_BYTES);
    try {
      for (const part of parts.slice(start, end)) {
        if (part.type === 'too-long') rows.push(withoutLocation(lines.tooLong()));
        else for (const row of lines.rowsOf(part.bytes)) rows.push(withoutLocation(row));
      }
    } catch (error) {
      if (error instanceof FileNotUtf8Error) return { rows, notUtf8: true };
      throw error;
    }
    start = end;
  }
  return { rows, notUtf8: false };
}

/** Awkward NDJSON: blank and space-only lines, JSON, not JSON, lines past the bound, bytes that are not UTF-8, LF, CRLF and lone CR, a BOM. */
export const awkwardNdjson = (tooLong: string) =>
  fc
    .tuple(
      fc.boolean(),
      fc.array(
        fc.tuple(
          fc.oneof(
            fc.constant(Buffer.from('')),
            fc.constant(Buffer.from('  ')),
            fc.json({ maxDepth: 1 }).map((text) => Buffer.from(text)),
            fc.constant(Buffer.from('{"a":"é€😀"}')),
            fc.constant(Buffer.from('{bad')),
            fc.constant(Buffer.from(tooLong)),
            fc.constant(Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x7d])),
          ),
          fc.constantFrom('\n', '\r\n', '\r', ''),
        ),
        { maxLength: 14 },
      ),
    )
    .map(([bom, lines]) => Buffer.concat([Buffer.from(bom ? '\uFEFF' : ''), ...lines.flatMap(([content, end]) => [content, Buffer.from(end)])]));

describe('NDJSON in two stages (cutNdjsonLines, then NdjsonLines on blocks of parts)', () => {
  it('reads the rows readNdjsonRows reads, whatever the chunks and the blocks', async () => {
    await fc.assert(
      fc.asyncProperty(
        awkwardNdjson('x'.repeat(MAX_LINE_BYTES + 5)),
        fc.array(fc.nat(), { maxLength: 20 }),
        fc.array(fc.integer({ min: 1, max: 4 }), { maxLength: 5 }),
        async (bytes, cuts, groupSizes) => {
          // note: the same chunks for both: a line past the bound that arrives whole is decoded
          // (and may then be found not UTF-8), one that arrives in pieces is dropped unread, in
          // either reading.
          const expected = await readInOneStage(chunked(bytes, cuts));
          expect(await readInTwoStages(chunked(bytes, cuts), groupSizes)).toEqual(expected);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('removes a BOM only at the start of the file', async () => {
    const bom = '\uFEFF{"a":1}\n';
    expect(await readInTwoStages(Readable.from([Buffer.from(bom + bom)]), [1])).toEqual(await readInOneStage(Readable.from([Buffer.from(bom + bom)])));
    const read = await readInTwoStages(Readable.from([Buffer.from(bom), Buffer.from(bom)]), [1]);
    expect(read.rows[0]).toEqual({ value: { a: 1 } });
    expect(read.rows[1]).toHaveProperty('error');
  });
});
