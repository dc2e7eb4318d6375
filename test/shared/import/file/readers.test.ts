import { describe, expect, it } from 'vitest';
import { FileReadError } from '../../../../src/shared/import/file/file-read-error.js';
import { readCsvRows } from '../../../../src/shared/import/file/read-csv.js';
import { readJsonRows } from '../../../../src/shared/import/file/read-json.js';
import { readNdjsonRows } from '../../../../src/shared/import/file/read-ndjson.js';
import { rowFields } from '../../../../src/shared/import/file/row-fields.js';
import type { SourceRow } from '../../../../src/shared/import/file/source-row.js';
import { MachineRowSchema } from '../../../../src/shared/rows/machine-row.js';
import { streamOf } from './chunked-stream.js';

const fields = rowFields(MachineRowSchema);

async function collect(rows: AsyncIterable<SourceRow>): Promise<SourceRow[]> {
  const out: SourceRow[] = [];
  for await (const row of rows) out.push(row);
  return out;
}

const csv = (text: string, chunkSize?: number) => collect(readCsvRows(streamOf(text, chunkSize), { fields, kind: 'machines' }));
const locations = (rows: SourceRow[]) => rows.map((row) => row.location);

describe('readCsvRows', () => {
  const lines = [
    'template_id,category,manufacturer,model,nickname', // 1
    'tpl-1,fdm,Prusa,MK4,"Left', // 2: a quoted cell over three lines
    '',
    'bench"', // 4
    'tpl-2,fdm,Bambu,X1C,plain', // 5
    '', // 6: empty line
    'tpl-3,sla,"Form, Labs",Form 3,"say ""hi""', // 7
    'there"', // 8
    'tpl-4,fdm,Prusa,MK4,', // 9
  ];

  it.each([
    ['LF', '\n'],
    ['CRLF', '\r\n'],
  ])('gives each row the line its record starts on, past quoted multi-line cells and empty lines (%s)', async (_name, eol) => {
    const rows = await csv(lines.join(eol) + eol);
    expect(locations(rows)).toEqual([2, 5, 7, 9]);
    expect(rows[0]).toEqual({ location: 2, value: { template_id: 'tpl-1', category: 'fdm', manufacturer: 'Prusa', model: 'MK4', nickname: `Left${eol}${eol}bench` } });
    expect(rows[2]).toMatchObject({ value: { manufacturer: 'Form, Labs', nickname: `say "hi"${eol}there` } });
    expect(rows[3]).toEqual({ location: 9, value: { template_id: 'tpl-4', category: 'fdm', manufacturer: 'Prusa', model: 'MK4' } });
  });

  it('reads a file with a UTF-8 BOM and CRLF line ends, in any chunking', async () => {
    const text = '\uFEFFtemplate_id,category,manufacturer,model\r\ntpl-1,fdm,Prusa,MK4\r\ntpl-2,fdm,Prusa,MK3\r\n';
    for (const chunkSize of [1, 2, 5, 1000]) {
      const rows = await csv(text, chunkSize);
      expect(rows).toEqual([
        { location: 2, value: { template_id: 'tpl-1', category: 'fdm', manufacturer: 'Prusa', model: 'MK4' } },
        { location: 3, value: { template_id: 'tpl-2', category: 'fdm', manufacturer: 'Prusa', model: 'MK3' } },
      ]);
    }
  });

  it('counts a lone CR as a line break, like the other readers', async () => {
    const rows = await csv('template_id,category,manufacturer,model,nickname\rtpl-1,fdm,P,M,"a\rb"\rtpl-2,fdm,P,M,c\r');
    expect(locations(rows)).toEqual([2, 4]);
  });

  it('fails a record with the wrong number of cells at its line and reads on', async () => {
    const rows = await csv('template_id,category,manufacturer,model\ntpl-1,fdm\ntpl-2,fdm,Prusa,MK4\n');
    expect(rows).toEqual([
      { location: 2, error: 'expected 4 cells as in the header, got 2' },
      { location: 3, value: { template_id: 'tpl-2', category: 'fdm', manufacturer: 'Prusa', model: 'MK4' } },
    ]);
  });

  it('splits array cells on |', async () => {
    const rows = await csv('template_id,category,manufacturer,model,capabilities,is_skill_station\ntpl-1,fdm,Prusa,MK4,pla|petg,true\n');
    expect(rows[0]).toMatchObject({ value: { capabilities: ['pla', 'petg'], is_skill_station: true } });
  });

  it.each([
    ['an empty file', '', /empty/],
    ['a header of unknown names', 'a,b\n1,2\n', /header naming machines fields/],
    ['an unclosed quote', 'template_id,category,manufacturer,model\ntpl-1,fdm,"Prusa,MK4\n', /^CSV syntax error: a quoted cell is not closed, on line \d+$/],
    ['a quote inside a cell that is not quoted, never quoting the cell', `template_id,category\ntpl-1,fd\u202e${'x'.repeat(5_000)}"m\n`, /^CSV syntax error: a quote inside a cell that is not quoted, on line 2$/],
  ])('stops on %s', async (_name, text, message) => {
    await expect(csv(text)).rejects.toThrow(message);
    await expect(csv(text)).rejects.toBeInstanceOf(FileReadError);
  });
});

describe('readNdjsonRows', () => {
  const ndjson = (text: string, chunkSize?: number) => collect(readNdjsonRows(streamOf(text, chunkSize)));

  it.each([
    ['LF', '\n'],
    ['CRLF', '\r\n'],
  ])('numbers rows by line, skips blank lines, fails a line that is not JSON (%s)', async (_name, eol) => {
    const rows = await ndjson(['\uFEFF{"a":1}', '', '  ', '{"a":2}', '{"a":', '[1]', '{"a":"x\\ny"}'].join(eol) + eol);
    expect(rows).toEqual([
      { location: 1, value: { a: 1 } },
      { location: 4, value: { a: 2 } },
      { location: 5, error: expect.stringMatching(/^invalid JSON: /) },
      { location: 6, value: [1] },
      { location: 7, value: { a: 'x\ny' } },
    ]);
  });
});

describe('readJsonRows', () => {
  const json = (text: string, chunkSize?: number) => collect(readJsonRows(streamOf(text, chunkSize)));

  it('streams the elements of a top-level array with their index, BOM or not', async () => {
    const text = '\uFEFF[\r\n {"a": 1},\r\n "x",\r\n {"b": [1, {"c": "]"}]}\r\n]\r\n';
    expect(await json(text)).toEqual([
      { location: 0, value: { a: 1 } },
      { location: 1, value: 'x' },
      { location: 2, value: { b: [1, { c: ']' }] } },
    ]);
  });

  it.each([
    ['a top-level object', '{"a": 1}'],
    ['broken JSON', '[{"a": 1}, {"a": }]'],
    ['a truncated array', '[{"a": 1}, {"a"'],
  ])('stops on %s', async (_name, text) => {
    await expect(json(text)).rejects.toThrow(/not a JSON array of rows/);
    await expect(json(text)).rejects.toBeInstanceOf(FileReadError);
  });
});
