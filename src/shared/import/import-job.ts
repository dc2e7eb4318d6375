import { z } from 'zod';
import { IMPORT_KIND_NAMES } from './import-kinds.js';
import { RowErrorSchema } from '../rows/row-errors.js';
import { RowOutcomesSchema } from './row-outcomes.js';

/**
 * What the API hands the worker: the counts and the per-row errors of the request, so the worker
 * records the whole result. The valid rows travel beside the job (rows-store.ts). Never a
 * secret. note: the worker parses every job with this schema: the queue is a trust boundary
 * (anything with Redis access can add a job). Keys it does not know are dropped: the `replyTo`
 * of an API before 0.6.0, say.
 */
export const ImportJobDataSchema = z.object({
  kind: z.enum(IMPORT_KIND_NAMES as ['machines', 'listings']),
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
  /**
   * the rows change only the fields they carry in the rows their external_ids name
   * (docs/catalogue.md#merge); each row then lists them (merge-row.ts). note: a worker of an
   * earlier version drops this key and would replace whole rows with partial ones: a merge job
   * fails there instead (rows-hand-over.ts encodeMergeRows).
   */
  merge: z.boolean().default(false),
  /**
   * how the rows beside the job are encoded: `copy`, the text `COPY` reads (copy-rows.ts), or
   * `json` (rows-hand-over.ts; every merge, and every job of an API before 0.11.0). note: a
   * worker before 0.11.0 drops this key and hands `COPY` text to json_to_recordset, which
   * refuses it: the job fails and writes nothing (upgrade the workers before the API).
   */
  rowsFormat: z.enum(['json', 'copy']).default('json'),
  /** run the whole write, then roll it back (docs/endpoints.md#dry-run) */
  dryRun: z.boolean().default(false),
  /**
   * the request asked for each row's id and outcome (`?return=rows`, row-outcomes.ts): the rows
   * then travel with their request index (copy-rows.ts), and the result and the record carry
   * them. note: a worker of an earlier version drops this key and writes a merge, an archive or a
   * delete without `rows`, which the answer then lacks (docs/catalogue.md#rows-and-their-ids); whole
   * rows travel as `COPY` text, which a worker before 0.11.0 fails, writing nothing.
   */
  returnRows: z.boolean().default(false),
  /**
   * when the API accepted the request (ms since the epoch): the import's `created_at`. note:
   * optional, so that a job from an older API replica is recorded at the time it is written.
   */
  createdAt: z.number().int().positive().optional(),
});
/** How the rows of an import job travel beside it (ImportJobDataSchema's `rowsFormat`). */
export type RowsFormat = 'json' | 'copy';

/** A job's data as the API adds it; the flags may be left out (false). */
export type ImportJobData = z.input<typeof ImportJobDataSchema>;
/** A job's data as the worker has checked it. */
export type ImportJob = z.output<typeof ImportJobDataSchema>;

/** What an import job returns, and what the API answers with its 201. */
export const ImportResultSchema = z.object({
  inserted: z.number().int().nonnegative(),
  /** only when rows were matched on `external_id`: rows that existed and were changed */
  updated: z.number().int().nonnegative().optional(),
  /** only when rows were matched on `external_id`: rows that existed and were already as sent */
  unchanged: z.number().int().nonnegative().optional(),
  skipped: z.number().int().nonnegative(),
  errors: z.array(RowErrorSchema),
  /** only when the request asked (`returnRows`) */
  rows: RowOutcomesSchema.optional(),
});
export type ImportResult = z.infer<typeof ImportResultSchema>;
