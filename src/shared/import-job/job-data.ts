import { z } from 'zod';
import { BULK_KIND_NAMES } from '../rows/bulk-kinds.js';
import { ROW_ERROR_CODE_MEANINGS, ROW_ERROR_CODES } from '../rows/row-error-codes.js';

/** One problem of a failing row (docs/rows.md#row-error-codes). */
export const RowErrorDetailSchema = z.object({
  field: z.string().nullable().meta({ description: 'The field as the reason names it (`title`, `photo_urls[2]`), or null for the whole row.' }),
  code: z.enum(ROW_ERROR_CODES).meta({
    description: `What is wrong, from a closed set that never changes meaning:\n\n${ROW_ERROR_CODES.map((code) => `- \`${code}\`: ${ROW_ERROR_CODE_MEANINGS[code]}`).join('\n')}`,
  }),
  message: z.string().meta({ description: 'The same problem in words, as the reason says it.' }),
});

/** One row the API refused, by its position in the request. */
export const RowErrorSchema = z.object({
  index: z.number().int().nonnegative(),
  /** the row's own `external_id`, when it sent a valid one (docs/rows.md#external-id) */
  external_id: z.string().optional().meta({ description: 'The row\'s own `external_id`, when it sent a valid one.' }),
  reason: z.string().meta({ description: 'Every problem of the row in words: `field: message`, joined with `; `.' }),
  // note: a job from an older API replica (a rolling deploy) has no details; it is still valid.
  details: z.array(RowErrorDetailSchema).default([]).meta({ description: 'One entry per problem, in the order of the reason.' }),
});

/**
 * What the API hands the worker: the counts and the per-row errors of the request, so the worker
 * records the whole result. The valid rows travel beside the job (rows-store.ts). Never a
 * secret. note: the worker parses every job with this schema: the queue is a trust boundary
 * (anything with Redis access can add a job).
 */
export const ImportJobDataSchema = z.object({
  kind: z.enum(BULK_KIND_NAMES as ['machines', 'listings']),
  accountId: z.uuid(),
  requestId: z.string().min(1),
  /** rows sent in the request, valid or not */
  total: z.number().int().positive(),
  errors: z.array(RowErrorSchema),
  /** how many valid rows the job writes */
  rowCount: z.number().int().positive(),
  /**
   * some row of the request carried `external_id`: rows are matched on it and the result counts
   * `updated` and `unchanged` (docs/rows.md#external-id). note: defaults keep a job from an older
   * API replica valid during a rolling deploy.
   */
  matchExternalIds: z.boolean().default(false),
  /** run the whole write, then roll it back (docs/endpoints.md#dry-run) */
  dryRun: z.boolean().default(false),
});
/** A job's data as the API adds it; the flags may be left out (false). */
export type ImportJobData = z.input<typeof ImportJobDataSchema>;
/** A job's data as the worker has checked it. */
export type CheckedImportJob = z.output<typeof ImportJobDataSchema>;

/** What an import job returns, and what the API answers with its 201. */
export const BulkResultSchema = z.object({
  inserted: z.number().int().nonnegative(),
  /** only when rows were matched on `external_id`: rows that existed and were changed */
  updated: z.number().int().nonnegative().optional(),
  /** only when rows were matched on `external_id`: rows that existed and were already as sent */
  unchanged: z.number().int().nonnegative().optional(),
  skipped: z.number().int().nonnegative(),
  errors: z.array(RowErrorSchema),
});
export type BulkResult = z.infer<typeof BulkResultSchema>;
