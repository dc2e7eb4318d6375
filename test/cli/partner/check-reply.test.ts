import { describe, expect, it } from 'vitest';
import { checkBulkReply, rowErrorsOfRefusal } from '../../../src/cli/partner/check-reply.js';

const error = (index: number, reason = 'model: required') => ({ index, reason, details: [{ field: 'model', code: 'required', message: 'required' }] });

describe('checkBulkReply', () => {
  it.each<[string, unknown, number]>([
    ['every row inserted', { inserted: 3, skipped: 0, errors: [] }, 3],
    ['some rows skipped, their errors in any order', { inserted: 1, skipped: 2, errors: [error(2), error(0)] }, 3],
    ['the sync counts', { inserted: 1, updated: 1, unchanged: 1, skipped: 0, errors: [] }, 3],
    ['only one of the sync counts', { inserted: 1, updated: 2, skipped: 0, errors: [] }, 3],
    ['an error entry of an older server, without details', { inserted: 0, skipped: 1, errors: [{ index: 0, reason: 'x' }] }, 1],
    ['a row-error code this CLI does not know yet', { inserted: 0, skipped: 1, errors: [{ index: 0, reason: 'x: y', details: [{ field: 'x', code: 'future', message: 'y' }] }] }, 1],
    ['fields this CLI does not know yet', { inserted: 1, skipped: 0, errors: [], request_id: 'r' }, 1],
  ])('believes %s', (_name, body, rows) => {
    expect(checkBulkReply(body, rows, false)).toMatchObject({ ok: true });
  });

  it.each<[string, unknown, number, string]>([
    ['text', 'created', 1, 'it is not a JSON object'],
    ['an array', [], 1, 'it is not a JSON object'],
    ['null', null, 1, 'it is not a JSON object'],
    ['a missing count', { inserted: 1, errors: [] }, 1, 'it is not of the documented shape (skipped: Invalid input: expected number, received undefined)'],
    ['a count as text', { inserted: '1', skipped: 0, errors: [] }, 1, 'it is not of the documented shape (inserted: Invalid input: expected number, received string)'],
    ['a negative count', { inserted: 2, skipped: -1, errors: [] }, 1, 'it is not of the documented shape (skipped: Too small: expected number to be >=0)'],
    ['an entry without a reason', { inserted: 0, skipped: 1, errors: [{ index: 0 }] }, 1, 'it is not of the documented shape (errors[0].reason: Invalid input: expected string, received undefined)'],
    ['too many rows', { inserted: 55, skipped: 0, errors: [] }, 5, 'inserted + skipped is 55, but 5 rows were sent'],
    ['too few rows', { inserted: 4, skipped: 0, errors: [] }, 5, 'inserted + skipped is 4, but 5 rows were sent'],
    ['sync counts that do not add up', { inserted: 1, updated: 1, unchanged: 1, skipped: 0, errors: [] }, 5, 'inserted + updated + unchanged + skipped is 3, but 5 rows were sent'],
    ['an index past the batch', { inserted: 4, skipped: 1, errors: [error(5)] }, 5, 'errors[0].index is 5, but the rows sent are 0 to 4'],
    ['an index listed twice', { inserted: 3, skipped: 2, errors: [error(1), error(1)] }, 5, 'row 1 is listed twice in errors'],
    ['fewer errors than skipped rows', { inserted: 3, skipped: 2, errors: [error(1)] }, 5, 'skipped is 2, but errors lists 1 row'],
    ['more errors than skipped rows', { inserted: 3, skipped: 0, errors: [error(1), error(2)] }, 5, 'skipped is 0, but errors lists 2 rows'],
  ])('does not believe %s', (_name, body, rows, problem) => {
    expect(checkBulkReply(body, rows, false)).toEqual({ ok: false, problem });
  });

  it("holds a dry run's 200 to dry_run: true and the same counts", () => {
    expect(checkBulkReply({ inserted: 1, skipped: 0, errors: [], dry_run: true }, 1, true)).toMatchObject({ ok: true });
    expect(checkBulkReply({ inserted: 1, skipped: 0, errors: [] }, 1, true)).toMatchObject({ ok: false });
    expect(checkBulkReply({ inserted: 2, skipped: 0, errors: [], dry_run: true }, 1, true)).toEqual({ ok: false, problem: 'inserted + skipped is 2, but 1 rows were sent' });
  });

  it('passes on the row errors with every text the server wrote cut and its controls written out', () => {
    const long = `\u001b[31m${'r'.repeat(2_000)}`;
    const check = checkBulkReply({ inserted: 0, skipped: 1, errors: [{ index: 0, external_id: long, reason: long, details: [{ field: long, code: long, message: long }] }] }, 1, false);
    const cut = `\\u001b[31m${'r'.repeat(995)}… (1005 more characters)`;
    expect(check).toEqual({ ok: true, reply: { inserted: 0, updated: 0, unchanged: 0, rowErrors: [{ index: 0, external_id: cut, reason: cut, details: [{ field: cut, code: cut, message: cut }] }] } });
  });
});

describe('rowErrorsOfRefusal', () => {
  it('keeps the well-formed entries of a 400, bounded, and drops the others', () => {
    expect(rowErrorsOfRefusal({ error: 'no valid rows', errors: [error(0, 'x'.repeat(1_500)), { index: 'one' }, 'two'] })).toEqual([
      { ...error(0, `${'x'.repeat(1_000)}… (500 more characters)`) },
    ]);
    expect(rowErrorsOfRefusal({ error: 'Request body too large' })).toBeUndefined();
  });
});
