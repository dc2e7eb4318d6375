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

/** The comparison point of the set-based insert: the same transaction, rows sent with COPY. */
export async function copyImport(sql: postgres.Sql, accountId: string, rows: ListingRow[]): Promise<void> {
  const jobId = randomUUID();
  await sql.begin(async (tx) => {
    const [account] = await tx<{ display_name: string; avatar_url: string | null }[]>`
      select display_name, avatar_url from accounts where id = ${accountId}`;
    await tx`
      insert into imports (job_id, account_id, kind, request_id, inserted, skipped, errors)
      values (${jobId}, ${accountId}, 'listings', 'bench', ${rows.length}, 0, '[]')`;
    const lines = rows
      .map((row) => {
        const full: Record<string, unknown> = {
          ...row,
          account_id: accountId,
          import_job_id: jobId,
          maker_name: account!.display_name,
          maker_photo_url: account!.avatar_url,
        };
        return COLUMNS.map((c) => field(full[c])).join('\t');
      })
      .join('\n');
    const writable = await tx.unsafe(`copy listings (${COLUMNS.join(', ')}) from stdin`).writable();
    await new Promise<void>((resolve, reject) => {
      writable.on('error', reject);
      writable.on('finish', resolve);
      writable.end(`${lines}\n`);
    });
  });
}
