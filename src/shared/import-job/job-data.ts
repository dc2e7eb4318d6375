import { z } from 'zod';
import { BULK_KIND_NAMES } from '../rows/bulk-kinds.js';

/** One row the API refused, by its position in the request. */
export const RowErrorSchema = z.object({ index: z.number().int().nonnegative(), reason: z.string() });

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
});
export type ImportJobData = z.infer<typeof ImportJobDataSchema>;

/** What an import job returns, and what the API answers with its 201. */
export const BulkResultSchema = z.object({
  inserted: z.number().int().nonnegative(),
  skipped: z.number().int().nonnegative(),
  errors: z.array(RowErrorSchema),
});
export type BulkResult = z.infer<typeof BulkResultSchema>;
