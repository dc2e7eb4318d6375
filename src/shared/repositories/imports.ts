import type { Sql, TransactionSql } from '../infra/db.js';
import type { BulkResult, CheckedImportJob } from '../import-job/job-data.js';
import { markImportStep } from '../import-job/import-steps.js';
import { findImportRecord, ImportAbandonedError } from './import-records.js';
import type { ListingRow } from '../rows/listing-row.js';
import type { MachineRow } from '../rows/machine-row.js';

/** An import job as the worker writes it; the write fails unless exactly `rowCount` rows are inserted. */
export interface ImportWrite extends Omit<CheckedImportJob, 'matchExternalIds' | 'dryRun'>, Partial<Pick<CheckedImportJob, 'matchExternalIds' | 'dryRun'>> {
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
  external_id: 'text', title: 'text', description: 'text', price_cents: 'integer', currency: 'text', category: 'text', material: 'text',
  photo_urls: 'text[]', thumbnail_url: 'text', color: 'text', tags: 'text[]', print_time_hours: 'double precision',
  is_available: 'boolean', allows_custom_orders: 'boolean',
} satisfies Record<keyof ListingRow, string>);

const MACHINE_RECORD = sqlColumns({
  external_id: 'text', template_id: 'text', category: 'text', manufacturer: 'text', model: 'text', model_number: 'text', nickname: 'text',
  capabilities: 'text[]', is_skill_station: 'boolean',
} satisfies Record<keyof MachineRow, string>);

/** A machine whose identity changes is checked again (docs/rows.md#external-id). */
const MACHINE_IDENTITY = ['template_id', 'category', 'manufacturer', 'model', 'model_number'];

function sqlColumns(types: Record<string, string>) {
  const names = Object.keys(types);
  return {
    names: names.join(', '),
    fromRecord: names.map((name) => `r.${name}`).join(', '),
    definition: names.map((name) => `${name} ${types[name]}`).join(', '),
    /** the columns an update by external id replaces: every one but the id it matched on */
    replaced: names.filter((name) => name !== 'external_id'),
  };
}

/** `(t.a, t.b) is distinct from (excluded.a, excluded.b)`: whether an update changes anything. */
function changes(columns: readonly string[]): string {
  return `(${columns.map((c) => `t.${c}`).join(', ')}) is distinct from (${columns.map((c) => `excluded.${c}`).join(', ')})`;
}

/** What one kind's statement needs: its table, the columns it fills beside the row's own, and their values. */
interface RowTarget {
  table: 'listings' | 'machines';
  record: ReturnType<typeof sqlColumns>;
  /** columns set from the account or the import, not from the row */
  fixed: Record<string, unknown>;
  /** extra `set` assignments of an update, beside the replaced columns */
  onUpdate: string;
}

function rowTarget(kind: ImportWrite['kind'], jobId: string, account: { displayName: string; avatarUrl: string | null }): RowTarget {
  if (kind === 'listings') {
    return {
      table: 'listings',
      record: LISTING_RECORD,
      fixed: { import_job_id: jobId, maker_name: account.displayName, maker_photo_url: account.avatarUrl },
      onUpdate: '',
    };
  }
  return {
    table: 'machines',
    record: MACHINE_RECORD,
    fixed: { import_job_id: jobId, verification_status: 'pending' },
    onUpdate: `, verification_status = case when ${changes(MACHINE_IDENTITY)} then 'pending' else t.verification_status end`,
  };
}

/** How the rows of one import landed. */
interface RowsWritten {
  /** rows in the JSON the statement read */
  sent: number;
  inserted: number;
  updated: number;
}

/**
 * Inserts every row with one set-based statement. With `matchExternalIds`, a row whose
 * `external_id` the account already has in that table updates it instead, and only when
 * something would change (`where <changed>`): a row left as it was is neither returned nor
 * counted, so `sent - inserted - updated` were unchanged.
 *
 * note: the rows are taken in `external_id` order, so two imports of one account that share ids
 * lock them in the same order: the later one waits for the first to commit, then updates, and
 * neither meets a deadlock or a unique violation. `xmax = 0` tells a new row from an updated one.
 * The column lists are constants of this file, never input, so tx.unsafe is safe here. The rows
 * go as text cast to jsonb: a parameter PostgreSQL types as jsonb would make postgres.js
 * serialise the string again, as a JSON string.
 */
async function writeRows(tx: TransactionSql, target: RowTarget, accountId: string, rows: string, matchExternalIds: boolean): Promise<RowsWritten> {
  const { table, record, fixed, onUpdate } = target;
  const fixedNames = Object.keys(fixed);
  const columns = tx.unsafe(['account_id', ...fixedNames, record.names].join(', '));
  const values = Object.values(fixed).reduce<ReturnType<TransactionSql>>((list, value) => tx`${list}, ${value as string}`, tx`${accountId}`);
  const recordset = tx`jsonb_to_recordset(${rows}::text::jsonb) as r(${tx.unsafe(record.definition)})`;
  if (!matchExternalIds) {
    const written = await tx`insert into ${tx(table)} (${columns}) select ${values}, ${tx.unsafe(record.fromRecord)} from ${recordset}`;
    return { sent: written.count, inserted: written.count, updated: 0 };
  }
  // note: import_job_id names the import that last wrote the row; verification_status is set by onUpdate.
  const replaced = [...fixedNames.filter((name) => name !== 'verification_status'), ...record.replaced];
  const compared = replaced.filter((name) => name !== 'import_job_id');
  const [counts] = await tx<RowsWritten[]>`
    with input as (select r.* from ${recordset}),
    written as (
      insert into ${tx(table)} as t (${columns})
      select ${values}, ${tx.unsafe(record.fromRecord)} from input as r
      order by r.external_id
      on conflict (account_id, external_id) where external_id is not null
      do update set ${tx.unsafe(replaced.map((name) => `${name} = excluded.${name}`).join(', '))}, updated_at = now()${tx.unsafe(onUpdate)}
      where ${tx.unsafe(changes(compared))}
      returning (t.xmax = 0) as created
    )
    select (select count(*) from input)::int as sent,
           (count(*) filter (where created))::int as inserted,
           (count(*) filter (where not created))::int as updated
    from written`;
  return counts!;
}

/** Rolls a dry run's transaction back once its result is known. */
class DryRunRollback extends Error {
  override name = 'DryRunRollback';
  constructor(readonly result: BulkResult) {
    super('dry run: rolled back on purpose');
  }
}

/**
 * Writes one import in one transaction: its record in `imports` and all its rows with one
 * set-based statement (writeRows). Idempotent by job id: when the record already exists (the
 * job ran before, or runs twice at once), nothing is written and the recorded result is
 * returned; a record of a failed import (the API answered that it wrote nothing) throws
 * ImportAbandonedError. The table constraints check every row (types, lengths, categories, counts); a row
 * that breaks one, or a row count that differs from `rowCount`, rolls the whole import back, and
 * so do rows that turn out to be gone (ImportRowsGoneError). A dry run does all of it, then rolls
 * back and returns the result it would have had.
 */
export async function writeImport(
  sql: Sql,
  input: ImportWrite,
  hooks: { beforeCommit?: () => Promise<void> } = {},
): Promise<BulkResult> {
  try {
    return await sql.begin(async (tx) => {
      const result = await writeInTransaction(tx, input, hooks);
      if (input.dryRun === true) throw new DryRunRollback(result);
      return result;
    });
  } catch (error) {
    if (error instanceof DryRunRollback) return error.result;
    throw error;
  }
}

async function writeInTransaction(
  tx: TransactionSql,
  input: ImportWrite,
  hooks: { beforeCommit?: () => Promise<void> },
): Promise<BulkResult> {
  const [account] = await tx<{ displayName: string; avatarUrl: string | null }[]>`
    select display_name as "displayName", avatar_url as "avatarUrl" from accounts where id = ${input.accountId}`;
  if (!account) throw new AccountGoneError(`account ${input.accountId} no longer exists`);

  const matchExternalIds = input.matchExternalIds === true;
  const skipped = input.errors.length;
  // note: a concurrent duplicate blocks on the primary key here until the first commits,
  // then finds the record; so a job's rows are written at most once. With external ids the
  // counts are known only once the rows are written, and the record is completed then.
  const [recorded] = await tx`
    insert into imports (job_id, account_id, kind, request_id, inserted, skipped, errors)
    values (${input.jobId}, ${input.accountId}, ${input.kind}, ${input.requestId},
            ${input.rowCount}, ${skipped}, ${tx.json(input.errors)})
    on conflict (job_id) do nothing
    returning job_id`;
  if (!recorded) {
    const previous = await findImportRecord(tx, input.jobId);
    if (!previous) throw new Error(`import ${input.jobId} is recorded but its result cannot be read`);
    if (previous.state === 'failed') throw new ImportAbandonedError(`import ${input.jobId} was answered "nothing was written"; it writes nothing`);
    return previous.result;
  }

  markImportStep(input.requestId, 'write.recorded');
  const rows = await input.rowsJson;
  if (rows === null) throw new ImportRowsGoneError(`the rows of import ${input.jobId} are gone; nothing was written`);
  const written = await writeRows(tx, rowTarget(input.kind, input.jobId, account), input.accountId, rows, matchExternalIds);
  if (written.sent !== input.rowCount) {
    throw new ImportRowCountError(`import ${input.jobId} holds ${written.sent} rows, not the ${input.rowCount} it announced`);
  }
  markImportStep(input.requestId, 'write.inserted');
  let result: BulkResult = { inserted: written.inserted, skipped, errors: input.errors };
  if (matchExternalIds) {
    const unchanged = written.sent - written.inserted - written.updated;
    result = { inserted: written.inserted, updated: written.updated, unchanged, skipped, errors: input.errors };
    await tx`
      update imports set inserted = ${result.inserted}, updated = ${written.updated}, unchanged = ${unchanged}
      where job_id = ${input.jobId}`;
  }
  await hooks.beforeCommit?.();
  return result;
}
