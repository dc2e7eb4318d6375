import type { TransactionSql } from '../infra/db.js';
import type { ImportKind } from '../import/import-kinds.js';
import { createdAtOf, type ImportOfRequest } from './import-records.js';
import type { ListingRow } from '../rows/listing-row.js';
import type { MachineRow } from '../rows/machine-row.js';

/**
 * The statements that write an import: its record and its rows. note: statements only; the
 * transaction around them, the dry run's rollback and what a failure means for the job are the
 * worker's (src/worker/write-import.ts).
 */

/** The account's name and photo, which every listing it imports carries; undefined when the account is gone. */
export async function findImportingAccount(tx: TransactionSql, accountId: string): Promise<ImportingAccount | undefined> {
  const [account] = await tx<ImportingAccount[]>`
    select display_name as "displayName", avatar_url as "avatarUrl" from accounts where id = ${accountId}`;
  return account;
}

export interface ImportingAccount {
  displayName: string;
  avatarUrl: string | null;
}

/**
 * Records the import of `jobId` as completed with its request's counts and errors, unless it is
 * recorded already; true when this call recorded it. `started_at` is the transaction's start,
 * `finished_at` now. note: a concurrent insert of the same job id waits on the primary key until
 * the first transaction ends, then finds the record.
 */
export async function insertImportRecord(
  tx: TransactionSql,
  input: ImportOfRequest & { rowCount: number },
): Promise<boolean> {
  const [recorded] = await tx`
    insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, created_at, started_at, finished_at)
    values (${input.jobId}, ${input.accountId}, ${input.kind}, ${input.requestId}, ${input.total},
            ${input.rowCount}, ${input.errors.length}, ${tx.json(input.errors)}, 'completed', ${createdAtOf(input)}, now(), clock_timestamp())
    on conflict (job_id) do nothing
    returning job_id`;
  return recorded !== undefined;
}

/** The counts of an import that matched rows on `external_id`, known only once its rows are written. */
export async function recordMatchedCounts(tx: TransactionSql, jobId: string, counts: { inserted: number; updated: number; unchanged: number }): Promise<void> {
  await tx`
    update imports set inserted = ${counts.inserted}, updated = ${counts.updated}, unchanged = ${counts.unchanged}, finished_at = clock_timestamp()
    where job_id = ${jobId}`;
}

/**
 * The row columns as `json_to_recordset` reads them. note: the rows travel as one JSON
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

function rowTarget(kind: ImportKind, jobId: string, account: ImportingAccount): RowTarget {
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

/** The rows of a file import's staged chunk (import_file_chunks) that starts at `firstIndex`. */
export interface StagedChunkRows {
  firstIndex: number;
}

/** How the rows of one import landed. */
export interface RowsWritten {
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
 * go as text cast to json: a parameter PostgreSQL types as json would make postgres.js serialise
 * the string again, as a JSON string. json, not jsonb: the rows are read once, and json_to_recordset
 * reads text a fifth faster than jsonb is built from it.
 */
export async function writeRows(
  tx: TransactionSql,
  input: { kind: ImportKind; jobId: string; accountId: string; account: ImportingAccount; rows: string | StagedChunkRows; matchExternalIds: boolean },
): Promise<RowsWritten> {
  const { kind, jobId, accountId, account, rows, matchExternalIds } = input;
  const { table, record, fixed, onUpdate } = rowTarget(kind, jobId, account);
  const fixedNames = Object.keys(fixed);
  const columns = tx.unsafe(['account_id', ...fixedNames, record.names].join(', '));
  const values = Object.values(fixed).reduce<ReturnType<TransactionSql>>((list, value) => tx`${list}, ${value as string}`, tx`${accountId}`);
  const definition = tx.unsafe(record.definition);
  // note: a staged chunk is deleted by the statement that writes its rows (import-files.ts), so
  // its rows never travel to the worker and back.
  const taken =
    typeof rows === 'string'
      ? tx``
      : tx`taken as (delete from import_file_chunks where job_id = ${jobId} and first_index = ${rows.firstIndex} returning body),`;
  const recordset =
    typeof rows === 'string'
      ? tx`json_to_recordset(${rows}::text::json) as r(${definition})`
      : tx`taken cross join lateral json_to_recordset(taken.body::json) as r(${definition})`;
  if (!matchExternalIds) {
    const written = await tx`
      with ${taken} input as (select r.* from ${recordset})
      insert into ${tx(table)} (${columns}) select ${values}, ${tx.unsafe(record.fromRecord)} from input as r`;
    return { sent: written.count, inserted: written.count, updated: 0 };
  }
  // note: import_job_id names the import that last wrote the row; verification_status is set by onUpdate.
  const replaced = [...fixedNames.filter((name) => name !== 'verification_status'), ...record.replaced];
  const compared = replaced.filter((name) => name !== 'import_job_id');
  const [counts] = await tx<RowsWritten[]>`
    with ${taken} input as (select r.* from ${recordset}),
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
