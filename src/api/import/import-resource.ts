import { Readable } from 'node:stream';
import type { z } from 'zod';
import type { ImportSchema } from '../../shared/api-schemas/imports.js';
import { IMPORT_ERRORS_CSV_COLUMNS } from '../../shared/api-schemas/imports.js';
import type { Sql } from '../../shared/infra/db.js';
import { listImportErrors, type ImportView } from '../../shared/repositories/import-lookups.js';
import type { RowError } from '../../shared/rows/row-errors.js';
import { formulaSafeCsv } from '../../shared/formula-safe-csv.js';

/** An import as the API answers it (docs/imports.md). */
export function importResource(view: ImportView): z.input<typeof ImportSchema> {
  return {
    id: view.id,
    kind: view.kind,
    source: view.source,
    action: view.action,
    mode: view.mode,
    removal: removalOf(view),
    state: view.state,
    created_at: view.createdAt.toISOString(),
    started_at: view.startedAt?.toISOString() ?? null,
    finished_at: view.finishedAt?.toISOString() ?? null,
    rows: {
      received: view.received,
      processed: view.processed,
      inserted: view.inserted,
      updated: view.updated,
      unchanged: view.unchanged,
      archived: view.archived,
      deleted: view.deleted,
      skipped: view.skipped,
    },
    error_count: view.skipped,
  };
}

/** A mirror's removal (docs/catalogue.md#mirror); null for every other import. */
function removalOf(view: ImportView): z.input<typeof ImportSchema>['removal'] {
  const { removalMissing: missing, removalMaxPercent: maxRemoval, removalState: state } = view;
  if (view.mode !== 'mirror' || missing === null || maxRemoval === null || state === null) return null;
  return { missing, max_removal: maxRemoval, state, rows: view.removalRows ?? 0 };
}

/**
 * The header of an import's CSV download: IMPORT_ERRORS_CSV_COLUMNS, or for an archive or delete
 * whose entries were our ids, the same with `id` in the place of `external_id` (such an import has
 * no external_id to show). note: the place, not a column more, so that the download of every other
 * import stays as it was.
 */
function csvColumnsOf(firstErrors: readonly RowError[]): string[] {
  const columns: string[] = [...IMPORT_ERRORS_CSV_COLUMNS];
  return firstErrors.some((error) => error.id !== undefined) ? columns.map((column) => (column === 'external_id' ? 'id' : column)) : columns;
}

/** The CSV lines of one failed row: one per problem, or one with only the reason when it has no details. */
function csvRecordsOf(error: RowError): string[][] {
  const id = error.external_id ?? error.id ?? '';
  if (error.details.length === 0) return [[String(error.index), id, '', '', error.reason]];
  return error.details.map(({ field, code, message }) => [String(error.index), id, field ?? '', code, message]);
}

/** Failed rows read from the database at a time for the CSV download. */
const ROWS_PER_READ = 1_000;

/**
 * An import's failed rows as one CSV download: the header `index,external_id,field,code,message`
 * (csvColumnsOf), then a line per problem, read a page at a time so that a long list is never held
 * whole, its cells escaped as formulaSafeCsv says.
 */
export function importErrorsCsv(sql: Sql, accountId: string, importId: string): Readable {
  // note: the header is written as the first record, once the first page tells which it is (csvColumnsOf).
  const csv = formulaSafeCsv();
  const write = async () => {
    let startingAfter: number | undefined;
    for (;;) {
      const page = await listImportErrors(sql, accountId, importId, { limit: ROWS_PER_READ, ...(startingAfter === undefined ? {} : { startingAfter }) });
      if (startingAfter === undefined) csv.write(csvColumnsOf(page?.data ?? []));
      for (const error of page?.data ?? []) {
        for (const record of csvRecordsOf(error)) {
          if (!csv.write(record)) await new Promise((resolve) => csv.once('drain', resolve));
        }
      }
      if (!page?.hasMore) break;
      startingAfter = page.data.at(-1)!.index;
    }
    csv.end();
  };
  write().catch((error: unknown) => csv.destroy(error instanceof Error ? error : new Error(String(error))));
  return csv;
}
