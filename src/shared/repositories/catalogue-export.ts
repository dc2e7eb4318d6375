import type { Readable } from 'node:stream';
import type { ImportKind } from '../import/import-kinds.js';
import type { Sql } from '../infra/db.js';
import { catalogueConditions, ROW_FIELDS, TABLES, type CatalogueFilters } from './catalogue-rows.js';

/**
 * The statement of an export (docs/catalogue.md#export): every row of the account that passes the
 * list's filters, in id order, as PostgreSQL's COPY text, read in one snapshot.
 */

/** How a column's COPY text becomes the resource's value (copy-text.ts reads it by these). */
export type ExportColumnType = 'text' | 'number' | 'boolean' | 'json' | 'time';

export interface ExportColumn {
  name: string;
  type: ExportColumnType;
}

const TYPES: Record<string, ExportColumnType> = {
  price_cents: 'number',
  print_time_hours: 'number',
  is_available: 'boolean',
  allows_custom_orders: 'boolean',
  is_skill_station: 'boolean',
  photo_urls: 'json',
  tags: 'json',
  capabilities: 'json',
};

const TIME_COLUMNS: ExportColumn[] = ['created_at', 'updated_at', 'archived_at'].map((name) => ({ name, type: 'time' }));

/** Each kind's columns in the resource's order, as the list answers them (K.1). */
export const EXPORT_COLUMNS: Record<ImportKind, readonly ExportColumn[]> = {
  listings: columnsOf('listings'),
  machines: columnsOf('machines'),
};

function columnsOf(kind: ImportKind): ExportColumn[] {
  const fields = ROW_FIELDS[kind].split(',').map((name) => name.trim());
  return [...fields.map((name) => ({ name, type: TYPES[name] ?? 'text' })), ...TIME_COLUMNS];
}

/** A column as selected. note: an array as JSON (its COPY text is then JSON), `updated_at` as the list reads it. */
function selected({ name, type }: ExportColumn): string {
  if (type === 'json') return `array_to_json(${name})`;
  if (name === 'updated_at') return 'coalesce(updated_at, created_at)';
  return name;
}

/** A literal of a value this file checked itself. note: COPY runs as a simple query, which takes no parameters. */
function literalOf(value: string | Date): string {
  const text = value instanceof Date ? value.toISOString() : value;
  if (!/^[0-9A-Za-z:.-]+$/.test(text)) throw new Error('an export literal holds a character it must not');
  return `'${text}'`;
}

/**
 * The COPY of an export. note: the account is a UUID and the time an ISO string, both written by
 * this service (literalOf refuses anything else); the columns and the table are constants.
 * Ordered by `(account_id, id)` as a page is (cataloguePageStatement), so that the same index gives
 * the order.
 */
export function catalogueExportStatement(kind: ImportKind, accountId: string, filters: CatalogueFilters): string {
  const conditions = catalogueConditions(filters, literalOf, accountId);
  const columns = EXPORT_COLUMNS[kind].map(selected).join(', ');
  return `copy (select ${columns} from ${TABLES[kind]} where ${conditions.join(' and ')} order by account_id, id) to stdout`;
}

/** An export under way: its COPY text, and the transaction that reads it. */
export interface OpenExport {
  /** the rows as COPY text, a line each; ends when the last was read */
  copy: Readable;
  /** settles when the transaction has ended and its connection went back to the pool */
  ended: Promise<void>;
  /** stops the export: the statement is cancelled and the transaction rolled back */
  abandon(reason: Error): void;
}

/** One snapshot of the whole read, and nothing it could write. */
const SNAPSHOT = 'isolation level repeatable read read only';

/**
 * Starts an export in its own transaction, answering once PostgreSQL has started sending rows, so
 * that a database that cannot is an error before any byte of the answer.
 *
 * note: postgres.js pauses the connection's socket while the COPY stream is full and resumes it
 * only when the stream is read. Two consequences are handled here: a COPY that ended while paused
 * leaves the socket paused (the rest of its answer, and every later statement, unread), so it is
 * resumed once the stream ends; and an abandoned COPY is cancelled and its stream read on,
 * discarding, so that PostgreSQL, which acts on a cancel only once it can write again, stops, and
 * its error and ready messages reach the connection and the transaction can roll back. The stream
 * must therefore never be destroyed.
 */
export function openCatalogueExport(sql: Sql, kind: ImportKind, accountId: string, filters: CatalogueFilters): Promise<OpenExport> {
  const statement = catalogueExportStatement(kind, accountId, filters);
  return new Promise<OpenExport>((resolve, reject) => {
    const ended = sql.begin(SNAPSHOT, async (tx) => {
      // note: the COPY text of a time is in the session's zone; UTC makes it the list's ISO form (copy-text.ts)
      await tx.unsafe("set local timezone to 'UTC'");
      const query = tx.unsafe(statement);
      const copy: Readable = await query.readable();
      const resumeSocket = () => (copy as Readable & { _read(size: number): void })._read(0);
      let abandon!: (reason: Error) => void;
      const done = new Promise<void>((finish, fail) => {
        copy.once('end', () => {
          resumeSocket();
          finish();
        });
        // note: postgres.js destroys the stream with the COPY's error once PostgreSQL is ready
        // again; only then may the transaction send its ROLLBACK (before, it is refused as sent
        // during a COPY, and the connection would go back to the pool inside the transaction)
        copy.once('error', fail);
        abandon = (reason) => {
          copy.once('close', () => fail(reason));
          query.cancel();
          copy.unpipe();
          copy.resume();
        };
      });
      resolve({ copy, ended: ended.then(() => undefined), abandon });
      await done;
    });
    ended.catch(reject);
  });
}
