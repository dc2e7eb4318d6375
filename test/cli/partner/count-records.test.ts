import { describe, expect, it } from 'vitest';
import { countRecords } from '../../../src/cli/partner/count-records.js';
import { streamOf } from '../../shared/import/file/chunked-stream.js';

describe('countRecords', () => {
  it.each([
    ['csv', 'template_id,category\r\n"a\r\n,b",c\r\n\r\nd,e\r\n  \r\n', 2],
    ['csv', '\uFEFFtemplate_id\n"say ""hi"""\nx', 2],
    ['csv', 'header only\n', 0],
    ['ndjson', '\uFEFF{"a":1}\r\n\r\n  \r\n{"a":2}', 2],
    ['json', '\uFEFF[ {"a": [1, 2, {"x": "],[,"}]}, "s\\"]", 3, [], {} ]', 5],
    ['json', '[]', 0],
  ] as const)('%s: %j has %d rows, however it is chunked', async (format, text, rows) => {
    for (const chunkSize of [1, 2, 3, 64]) expect(await countRecords(streamOf(text, chunkSize), format)).toEqual({ rows });
  });

  it.each([
    ['csv', 'a,b\n"open,1\n'],
    ['json', '[{"a": 1}, {"b": '],
    ['json', '["abc'],
  ] as const)('%s: %j is truncated', async (format, text) => {
    expect((await countRecords(streamOf(text), format)).truncated).toBeTypeOf('string');
  });
});
