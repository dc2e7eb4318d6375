import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RowFailure } from '../../../src/cli/partner/batcher.js';
import { ReportWriter, type ReportFormat } from '../../../src/cli/partner/report.js';

const TWO_PROBLEMS: RowFailure = {
  location: 9,
  externalId: 'SKU-7',
  reason: 'currency: must be exactly USD; price_cents: must be a whole number',
  details: [
    { field: 'currency', code: 'not_allowed', message: 'must be exactly USD' },
    { field: 'price_cents', code: 'not_whole_number', message: 'must be a whole number' },
  ],
};
const NOT_AN_OBJECT: RowFailure = { location: 2, reason: 'row must be an object', details: [{ field: null, code: 'not_an_object', message: 'row must be an object' }] };
/** a failure that is not a row's own: the whole batch refused, or a network error */
const BATCH_REFUSED: RowFailure = { location: 12, reason: '413 Request body too large, "really"' };

describe('bulk-import --report', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bulk-import-report-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function report(format: ReportFormat, locationName: 'line' | 'index', failures: RowFailure[]): Promise<string> {
    const path = join(dir, `report-${Math.random().toString(36).slice(2)}.${format}`);
    const writer = await ReportWriter.open(path, format, locationName);
    await writer.add(failures);
    await writer.close();
    return readFile(path, 'utf8');
  }

  it('writes a CSV line per problem of a row, with its field and code, and one line with neither for a failure without details', async () => {
    expect(await report('csv', 'line', [NOT_AN_OBJECT, TWO_PROBLEMS, BATCH_REFUSED])).toBe(
      [
        'line,reason,field,code,external_id',
        '2,row must be an object,,not_an_object,',
        '9,currency: must be exactly USD; price_cents: must be a whole number,currency,not_allowed,SKU-7',
        '9,currency: must be exactly USD; price_cents: must be a whole number,price_cents,not_whole_number,SKU-7',
        '12,"413 Request body too large, ""really""",,,',
      ].join('\n') + '\n',
    );
  });

  it('quotes a code that needs it, as a server could send any', async () => {
    const odd: RowFailure = { location: 3, reason: 'x: y', details: [{ field: 'x', code: 'a,"b"' as 'required', message: 'y' }] };
    expect(await report('csv', 'line', [odd])).toBe('line,reason,field,code,external_id\n3,x: y,x,"a,""b""",\n');
  });

  it('names the first column index for a JSON array input', async () => {
    expect((await report('csv', 'index', [])).split('\n')[0]).toBe('index,reason,field,code,external_id');
  });

  it('writes a JSON entry per row with its details, and external_id only when the row had one', async () => {
    expect(JSON.parse(await report('json', 'index', [NOT_AN_OBJECT, TWO_PROBLEMS, BATCH_REFUSED]))).toEqual([
      { index: 2, reason: 'row must be an object', details: [{ field: null, code: 'not_an_object', message: 'row must be an object' }] },
      { index: 9, external_id: 'SKU-7', reason: TWO_PROBLEMS.reason, details: TWO_PROBLEMS.details },
      { index: 12, reason: BATCH_REFUSED.reason, details: [] },
    ]);
  });

  it('writes an empty JSON array when no row failed', async () => {
    expect(JSON.parse(await report('json', 'line', []))).toEqual([]);
  });
});
