import { z } from 'zod';
import { IMPORT_KIND_NAMES } from './import-kinds.js';
import { ImportResultSchema, type ImportJobData } from './import-job.js';
import { RowErrorSchema } from '../rows/row-errors.js';
import { ENTRY_FORMS, type RemovalEntry } from '../rows/removal-entries.js';

/**
 * The imports that archive or delete the rows a request names (docs/catalogue.md#archive-and-delete):
 * their job, what the job returns, and the action every import has.
 */

/** What an import does: `upsert` (bulk requests and files), or `archive` / `delete` the rows it names. */
export const IMPORT_ACTIONS = ['upsert', 'archive', 'delete'] as const;
export type ImportAction = (typeof IMPORT_ACTIONS)[number];
export type RowRemovalAction = Exclude<ImportAction, 'upsert'>;

export { ENTRY_FORMS, type EntryForm, type RemovalEntry } from '../rows/removal-entries.js';

/**
 * An archive's or delete's job, as the API adds it to the import queue. Its entries, the ones the
 * API found, travel beside it as an upsert's rows do (rows-store.ts): `{"entries": [{index, key}]}`.
 *
 * note: a rolling deploy. A worker of a version before this one parses every job with the upsert
 * schema, which requires `rowCount`: this job has none (it has `entryCount`), so such a worker
 * refuses it as malformed, writes nothing, and the API answers 503 `Import failed; nothing was
 * written`, safe to retry. It can never take an archive for an upsert. The entries are an object,
 * not an array, for the same reason (json_to_recordset refuses an object).
 */
export const RowRemovalJobDataSchema = z.object({
  action: z.enum(['archive', 'delete']),
  kind: z.enum(IMPORT_KIND_NAMES as ['machines', 'listings']),
  accountId: z.uuid(),
  requestId: z.string().min(1),
  /** entries sent in the request, valid or not */
  total: z.number().int().positive(),
  /** the entries the API refused, by index: malformed, repeated, or naming no row when it looked */
  errors: z.array(RowErrorSchema),
  by: z.enum(ENTRY_FORMS),
  /** the entries the worker resolves again in its transaction */
  entryCount: z.number().int().positive(),
  dryRun: z.boolean().default(false),
  /** the request asked for each entry's row and outcome (`?return=rows`; ImportJobDataSchema's `returnRows`) */
  returnRows: z.boolean().default(false),
  /** when the API accepted the request (ms since the epoch): the import's `created_at` */
  createdAt: z.number().int().positive().optional(),
});
export type RowRemovalJobData = z.input<typeof RowRemovalJobDataSchema>;
export type RowRemovalJob = z.output<typeof RowRemovalJobDataSchema>;

/** Any job of the import queue: an upsert's (import-job.ts) or an archive's or delete's. */
export type AnyImportJobData = ImportJobData | RowRemovalJobData;

/** A job's action: upsert jobs carry none. */
export function actionOf(data: AnyImportJobData): ImportAction {
  return 'action' in data ? data.action : 'upsert';
}

/**
 * Whether a job's data says it archives or deletes. note: read from the raw data, before any
 * schema: such a job is checked with its own schema, never with the upsert one.
 */
export function isRowRemovalJobData(data: unknown): boolean {
  const action = typeof data === 'object' && data !== null ? (data as { action?: unknown }).action : undefined;
  return action === 'archive' || action === 'delete';
}

/** The entries as they travel to the worker (see RowRemovalJobDataSchema). */
export function encodeRemovalEntries(entries: readonly RemovalEntry[]): string {
  return JSON.stringify({ entries });
}

const RemovalEntriesSchema = z.object({
  entries: z.array(z.object({ index: z.number().int().nonnegative(), key: z.string().min(1) })),
});

/** The entries of a job, or undefined when they are not what encodeRemovalEntries wrote (the queue is a trust boundary). */
export function decodeRemovalEntries(json: string): RemovalEntry[] | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return undefined;
  }
  const checked = RemovalEntriesSchema.safeParse(parsed);
  return checked.success ? checked.data.entries : undefined;
}

/**
 * What any import job returns and any import's record answers: an upsert's result
 * (ImportResultSchema), and for an archive `archived` and `unchanged` (rows already archived), for
 * a delete `deleted`; their `inserted` is 0. The routes answer each in their own shape.
 */
export const AnyImportResultSchema = ImportResultSchema.extend({
  archived: z.number().int().nonnegative().optional(),
  deleted: z.number().int().nonnegative().optional(),
});
export type AnyImportResult = z.infer<typeof AnyImportResultSchema>;
