import type { Sql, TransactionSql } from '../db.js';
import type { BulkKind } from '../bulk-kinds.js';
import type { BulkResult } from '../import-queue.js';
import type { ListingRow } from '../rows/listing-row.js';
import type { MachineRow } from '../rows/machine-row.js';
import type { RowError } from '../rows/validate-rows.js';

export type ImportWrite =
  | ImportWriteBase & { kind: 'machines'; rows: MachineRow[] }
  | ImportWriteBase & { kind: 'listings'; rows: ListingRow[] };

interface ImportWriteBase {
  jobId: string;
  kind: BulkKind;
  accountId: string;
  requestId: string;
  total: number;
  errors: RowError[];
}

export class AccountGoneError extends Error {
  override name = 'AccountGoneError';
}

const LISTING_COLUMNS = [
  'account_id', 'import_job_id', 'title', 'description', 'price_cents', 'currency', 'category', 'material',
  'photo_urls', 'thumbnail_url', 'color', 'tags', 'print_time_hours', 'is_available', 'allows_custom_orders',
  'maker_name', 'maker_photo_url',
] as const;

const MACHINE_COLUMNS = [
  'account_id', 'import_job_id', 'template_id', 'category', 'manufacturer', 'model', 'model_number', 'nickname',
  'capabilities', 'is_skill_station', 'verification_status',
] as const;

/**
 * Writes one import in one transaction: its record in `imports` and all its rows with one
 * set-based statement. Idempotent by job id: when the record already exists (the job ran
 * before, or runs twice at once), nothing is inserted and the recorded result is returned.
 */
export async function writeImport(
  sql: Sql,
  input: ImportWrite,
  hooks: { beforeCommit?: () => Promise<void> } = {},
): Promise<BulkResult> {
  return sql.begin(async (tx) => {
    const [account] = await tx<{ display_name: string; avatar_url: string | null }[]>`
      select display_name, avatar_url from accounts where id = ${input.accountId}`;
    if (!account) throw new AccountGoneError(`account ${input.accountId} no longer exists`);

    const result: BulkResult = { inserted: input.rows.length, skipped: input.errors.length, errors: input.errors };
    // note: a concurrent duplicate blocks on the primary key here until the first commits,
    // then finds the record; so a job's rows are written at most once.
    const [recorded] = await tx`
      insert into imports (job_id, account_id, kind, request_id, inserted, skipped, errors)
      values (${input.jobId}, ${input.accountId}, ${input.kind}, ${input.requestId},
              ${result.inserted}, ${result.skipped}, ${tx.json(result.errors)})
      on conflict (job_id) do nothing
      returning job_id`;
    if (!recorded) return (await findImportResult(tx, input.jobId)) as BulkResult;

    const owned = { account_id: input.accountId, import_job_id: input.jobId };
    if (input.kind === 'listings') {
      const maker = { maker_name: account.display_name, maker_photo_url: account.avatar_url };
      const rows = input.rows.map((row) => ({ ...row, ...owned, ...maker }));
      await tx`insert into listings ${tx(rows, LISTING_COLUMNS)}`;
    } else {
      const rows = input.rows.map((row) => ({ ...row, ...owned, verification_status: 'pending' }));
      await tx`insert into machines ${tx(rows, MACHINE_COLUMNS)}`;
    }
    await hooks.beforeCommit?.();
    return result;
  });
}

/** The recorded result of a job that has written its import, if it has. */
export async function findImportResult(sql: Sql | TransactionSql, jobId: string): Promise<BulkResult | undefined> {
  const [recorded] = await sql<BulkResult[]>`select inserted, skipped, errors from imports where job_id = ${jobId}`;
  return recorded;
}
