import type { ListingRow } from '../rows/listing-row.js';
import type { MachineRow } from '../rows/machine-row.js';
import type { MergeRow } from '../rows/merge-row.js';

/**
 * The rows of one import as the insert statement reads them: one JSON array of the normalised
 * rows, whose keys are the row columns (repositories/imports.ts recordImportWithRows reads them with json_to_recordset).
 */
export function encodeImportRows(rows: readonly (ListingRow | MachineRow)[]): string {
  return JSON.stringify(rows);
}

/**
 * The rows of an import with `update=merge` (merge-row.ts), as the merge statement reads them:
 * `{"merge": [...]}`. note: an object, not an array: a worker of an earlier version, which knows
 * nothing of merging and drops the job's `merge` flag, fails such a job (json_to_recordset refuses
 * an object) and writes nothing, rather than replacing whole rows with the fields sent.
 */
export function encodeMergeRows(rows: readonly MergeRow<ListingRow | MachineRow>[]): string {
  return `{"merge":${JSON.stringify(rows)}}`;
}

/**
 * The valid rows of an import, encoded as the worker passes them to PostgreSQL (`COPY` text as
 * bytes, copy-rows.ts; or JSON, above), handed over once to the queue. note: encoded, not
 * objects: the worker sends them on as they are. Handed over, not held: V8 keeps every variable
 * of an async function alive while it awaits, so a request waiting on its import would otherwise
 * keep up to ~2 MB of rows until the import ends.
 */
export class RowsHandOver {
  private rows: string | Uint8Array | undefined;

  constructor(rows: string | Uint8Array) {
    this.rows = rows;
  }

  take(): string | Uint8Array {
    const rows = this.rows;
    if (rows === undefined) throw new Error('the rows of this import were already handed over');
    this.rows = undefined;
    return rows;
  }
}
