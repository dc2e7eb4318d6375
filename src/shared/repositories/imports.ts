import type { Sql, TransactionSql } from '../infra/db.js';
import type { BulkResult, ImportJobData } from '../import-job/job-data.js';
import { markImportStep } from '../import-job/import-steps.js';
import type { ListingRow } from '../rows/listing-row.js';
import type { MachineRow } from '../rows/machine-row.js';

/** An import job as the worker writes it; the write fails unless exactly `rowCount` rows are inserted. */
export interface ImportWrite extends ImportJobData {
  jobId: string;
  /**
   * the normalised rows as encodeImportRows wrote them, or their fetch: it is awaited only once
   * the import is recorded, so it overlaps the statements before; null when they are gone
   */
  rowsJson: string | Promise<string | null>;
}

export class AccountGoneError extends Error {
  override name = 'AccountGoneError';
}

export class ImportRowCountError extends Error {
  override name = 'ImportRowCountError';
}

/** The rows of an import that is not recorded yet are gone (withdrawn or expired): nothing was written. */
export class ImportRowsGoneError extends Error {
  override name = 'ImportRowsGoneError';
}

/**
 * The row columns as `jsonb_to_recordset` reads them. note: the rows travel as one JSON
 * parameter instead of one bind parameter per value (3,400 for 200 listings): the statement
 * stays set-based, and postgres.js spends about 40% less CPU than serialising each value.
 */
const LISTING_RECORD = sqlColumns({
  title: 'text', description: 'text', price_cents: 'integer', currency: 'text', category: 'text', material: 'text',
  photo_urls: 'text[]', thumbnail_url: 'text', color: 'text', tags: 'text[]', print_time_hours: 'double precision',
  is_available: 'boolean', allows_custom_orders: 'boolean',
} satisfies Record<keyof ListingRow, string>);

const MACHINE_RECORD = sqlColumns({
  template_id: 'text', category: 'text', manufacturer: 'text', model: 'text', model_number: 'text', nickname: 'text',
  capabilities: 'text[]', is_skill_station: 'boolean',
} satisfies Record<keyof MachineRow, string>);

function sqlColumns(types: Record<string, string>) {
  const names = Object.keys(types);
  return {
    names: names.join(', '),
    fromRecord: names.map((name) => `r.${name}`).join(', '),
    definition: names.map((name) => `${name} ${types[name]}`).join(', '),
  };
}

/**
 * Writes one import in one transaction: its record in `imports` and all its rows with one
 * set-based statement. Idempotent by job id: when the record already exists (the job ran
 * before, or runs twice at once), nothing is inserted and the recorded result is returned.
 * The table constraints check every row (types, lengths, categories, counts); a row that breaks
 * one, or a row count that differs from `rowCount`, rolls the whole import back, and so do rows
 * that turn out to be gone (ImportRowsGoneError).
 */
export async function writeImport(
  sql: Sql,
  input: ImportWrite,
  hooks: { beforeCommit?: () => Promise<void> } = {},
): Promise<BulkResult> {
  return sql.begin(async (tx) => {
    const [account] = await tx<{ displayName: string; avatarUrl: string | null }[]>`
      select display_name as "displayName", avatar_url as "avatarUrl" from accounts where id = ${input.accountId}`;
    if (!account) throw new AccountGoneError(`account ${input.accountId} no longer exists`);

    const result: BulkResult = { inserted: input.rowCount, skipped: input.errors.length, errors: input.errors };
    // note: a concurrent duplicate blocks on the primary key here until the first commits,
    // then finds the record; so a job's rows are written at most once.
    const [recorded] = await tx`
      insert into imports (job_id, account_id, kind, request_id, inserted, skipped, errors)
      values (${input.jobId}, ${input.accountId}, ${input.kind}, ${input.requestId},
              ${result.inserted}, ${result.skipped}, ${tx.json(result.errors)})
      on conflict (job_id) do nothing
      returning job_id`;
    if (!recorded) {
      const previous = await findImportResult(tx, input.jobId);
      if (!previous) throw new Error(`import ${input.jobId} is recorded but its result cannot be read`);
      return previous;
    }

    markImportStep(input.requestId, 'write.recorded');
    const rows = await input.rowsJson;
    if (rows === null) throw new ImportRowsGoneError(`the rows of import ${input.jobId} are gone; nothing was written`);
    // note: the column lists are constants of this file, never input, so tx.unsafe is safe here.
    // The rows go as text cast to jsonb: a parameter PostgreSQL types as jsonb would make
    // postgres.js serialise the string again, as a JSON string.
    let written;
    if (input.kind === 'listings') {
      const c = LISTING_RECORD;
      written = await tx`
        insert into listings (account_id, import_job_id, maker_name, maker_photo_url, ${tx.unsafe(c.names)})
        select ${input.accountId}, ${input.jobId}, ${account.displayName}, ${account.avatarUrl}, ${tx.unsafe(c.fromRecord)}
        from jsonb_to_recordset(${rows}::text::jsonb) as r(${tx.unsafe(c.definition)})`;
    } else {
      const c = MACHINE_RECORD;
      written = await tx`
        insert into machines (account_id, import_job_id, verification_status, ${tx.unsafe(c.names)})
        select ${input.accountId}, ${input.jobId}, 'pending', ${tx.unsafe(c.fromRecord)}
        from jsonb_to_recordset(${rows}::text::jsonb) as r(${tx.unsafe(c.definition)})`;
    }
    if (written.count !== input.rowCount) {
      throw new ImportRowCountError(`import ${input.jobId} holds ${written.count} rows, not the ${input.rowCount} it announced`);
    }
    markImportStep(input.requestId, 'write.inserted');
    await hooks.beforeCommit?.();
    return result;
  });
}

/** The recorded result of a job that has written its import, if it has. */
export async function findImportResult(sql: Sql | TransactionSql, jobId: string): Promise<BulkResult | undefined> {
  const [recorded] = await sql<BulkResult[]>`select inserted, skipped, errors from imports where job_id = ${jobId}`;
  return recorded;
}
