import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ImportJobDataSchema } from '../../../src/shared/import/import-job.js';
import { RowErrorSchema } from '../../../src/shared/rows/row-errors.js';

const detail = { field: 'currency', code: 'not_allowed', message: 'must be exactly USD' };

/** The row errors a job carries from the API to the worker (docs/rows.md#row-error-codes). */
describe('RowErrorSchema', () => {
  it('takes an entry from an API replica that predates details (a rolling deploy), as one without details', () => {
    expect(RowErrorSchema.parse({ index: 3, reason: 'currency: must be exactly USD' })).toEqual({ index: 3, reason: 'currency: must be exactly USD', details: [] });
  });

  it('keeps the details and external_id of a current entry as they are', () => {
    const entry = { index: 0, external_id: 'SKU-1', reason: 'currency: must be exactly USD', details: [detail] };
    expect(RowErrorSchema.parse(entry)).toEqual(entry);
  });

  it.each([
    ['a code outside the closed set', { ...detail, code: 'bad_currency' }],
    ['a field that is neither text nor null', { ...detail, field: 3 }],
    ['no message', { field: 'currency', code: 'not_allowed' }],
  ])('refuses a detail with %s (the queue is a trust boundary)', (_case, broken) => {
    expect(RowErrorSchema.safeParse({ index: 0, reason: 'currency: must be exactly USD', details: [broken] }).success).toBe(false);
  });

  it('lets the worker check a whole job from an older replica', () => {
    const job = { kind: 'listings', accountId: randomUUID(), requestId: 'req-1', total: 2, rowCount: 1, errors: [{ index: 1, reason: 'title: required' }] };
    expect(ImportJobDataSchema.parse(job).errors).toEqual([{ index: 1, reason: 'title: required', details: [] }]);
  });
});
