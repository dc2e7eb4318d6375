import { randomUUID } from 'node:crypto';
import type postgres from 'postgres';
import type { ListingRow } from '../../src/shared/rows/listing-row.js';

/** COPY text-format field: backslash, tab, newline and carriage return escaped; null as \N. */
function field(value: unknown): string {
  if (value === null || value === undefined) return '\\N';
  if (Array.isArray(value)) return field(`{${value.map((v) => `"${String(v).replace(/[\\"]/g, (c) => `\\${c}`)}"`).join(',')}}`);
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.replace(/[\\\t\n\r]/g, (c) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' })[c]!);
}

const COLUMNS = [
  'account_id', 'import_job_id', 'title', 'description', 'price_cents', 'currency', 'category', 'material',
  'photo_urls', 'thumbnail_url', 'color', 'tags', 'print_time_hours', 'is_available', 'allows_custom_orders',
  'maker_name', 'maker_photo_url',
] as const;

/** A listing as one line of COPY's text format, with what the service adds to it. */
function copyLine(row: ListingRow, added: Record<string, unknown>): string {
  const full: Record<string, unknown> = { ...row, ...added };
  return COLUMNS.map((c) => field(full[c])).join('\t');
}

/** In one transaction: the import's record, then `send(copy)` with the COPY's added columns. */
async function copyTransaction(
  sql: postgres.Sql,
  accountId: string,
  rowCount: number,
  send: (tx: postgres.TransactionSql, added: Record<string, unknown>) => Promise<void>,
): Promise<void> {
  const jobId = randomUUID();
  await sql.begin(async (tx) => {
    const [account] = await tx<{ display_name: string; avatar_url: string | null }[]>`
      select display_name, avatar_url from accounts where id = ${accountId}`;
    await tx`
      insert into imports (job_id, account_id, kind, request_id, inserted, skipped, errors)
      values (${jobId}, ${accountId}, 'listings', 'bench', ${rowCount}, 0, '[]')`;
    await send(tx, { account_id: accountId, import_job_id: jobId, maker_name: account!.display_name, maker_photo_url: account!.avatar_url });
  });
}

/** One COPY of `rows`, each with the columns the service adds to it (`added`). */
export async function copyRows(sql: postgres.Sql | postgres.TransactionSql, rows: ListingRow[], added: Record<string, unknown>): Promise<void> {
  const lines = rows.map((row) => copyLine(row, added)).join('\n');
  const writable = await sql.unsafe(`copy listings (${COLUMNS.join(', ')}) from stdin`).writable();
  await new Promise<void>((resolve, reject) => {
    writable.on('error', reject);
    writable.on('finish', resolve);
    writable.end(`${lines}\n`);
  });
}

/** The comparison point of the set-based insert: the same transaction, rows sent with COPY. */
export async function copyImport(sql: postgres.Sql, accountId: string, rows: ListingRow[]): Promise<void> {
  await copyTransaction(sql, accountId, rows.length, (tx, added) => copyRows(tx, rows, added));
}

/**
 * A plain COPY of many listings in one transaction, sent a batch at a time as the connection
 * drains: the comparison point of a whole file, which is never held whole either.
 */
export async function copyListings(sql: postgres.Sql, accountId: string, rowCount: number, batches: Iterable<ListingRow[]>): Promise<void> {
  await copyTransaction(sql, accountId, rowCount, async (tx, added) => {
    const writable = await tx.unsafe(`copy listings (${COLUMNS.join(', ')}) from stdin`).writable();
    await new Promise<void>((resolve, reject) => {
      writable.on('error', reject);
      writable.on('finish', resolve);
      const iterator = batches[Symbol.iterator]();
      const write = () => {
        for (let next = iterator.next(); !next.done; next = iterator.next()) {
          if (!writable.write(`${next.value.map((row) => copyLine(row, added)).join('\n')}\n`)) {
            writable.once('drain', write);
            return;
          }
        }
        writable.end();
      };
      write();
    });
  });
}
