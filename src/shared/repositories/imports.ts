import type { Writable } from 'node:stream';
import postgres from 'postgres';
import { PG_UNIQUE_VIOLATION, type Fragment, type Sql, type TransactionSql } from '../infra/db.js';
import type { ImportKind } from '../import/import-kinds.js';
import { createdAtOf, type ImportOfRequest } from './import-records.js';
import { ROW_COLUMNS } from '../rows/row-columns.js';
import type { RowOutcome } from '../import/row-outcomes.js';
import { keepOutcomes, outcomesAnswer } from './row-outcomes.js';

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
 * Records the import of `importId` as completed with its request's counts and errors, unless it is
 * recorded already; true when this call recorded it. `started_at` is the transaction's start,
 * `finished_at` now. note: a concurrent insert of the same job id waits on the primary key until
 * the first transaction ends, then finds the record. The worker uses it only for a job whose rows
 * are gone, to learn (waiting for a transaction under way) whether an earlier run wrote it; an
 * import with its rows is recorded by recordImportWithRows.
 */
export async function insertImportRecord(
  tx: TransactionSql,
  input: ImportOfRequest & { rowCount: number },
): Promise<boolean> {
  const [recorded] = await tx`
    insert into imports (job_id, account_id, kind, request_id, received, inserted, skipped, errors, state, created_at, started_at, finished_at)
    values (${input.importId}, ${input.accountId}, ${input.kind}, ${input.requestId}, ${input.total},
            ${input.rowCount}, ${input.errors.length}, ${tx.json(input.errors)}, 'completed', ${createdAtOf(input)}, now(), clock_timestamp())
    on conflict (job_id) do nothing
    returning job_id`;
  return recorded !== undefined;
}

/**
 * The row columns as `json_to_recordset` and the copied rows' table read them. note: the rows
 * travel as one JSON parameter or one `COPY` instead of one bind parameter per value (3,400 for
 * 200 listings): the statement stays set-based, and postgres.js spends about 40% less CPU than
 * serialising each value.
 */
const LISTING_RECORD = sqlColumns(ROW_COLUMNS.listings);
const MACHINE_RECORD = sqlColumns(ROW_COLUMNS.machines);

/** A machine whose identity changes is checked again (docs/rows.md#external-id). */
export const MACHINE_IDENTITY = ['template_id', 'category', 'manufacturer', 'model', 'model_number'];

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

/** Where a statement takes the maker's name and photo from: values sent with it, or columns it reads itself. */
interface MakerSource {
  displayName: Fragment;
  avatarUrl: Fragment;
}

/** What one kind's statement needs: its table, the columns it fills beside the row's own, and their values. */
export interface RowTarget {
  table: 'listings' | 'machines';
  record: ReturnType<typeof sqlColumns>;
  /** columns set from the account or the import, not from the row */
  fixed: Record<string, Fragment>;
  /** extra `set` assignments of an update, beside the replaced columns */
  onUpdate: string;
}

/** The values an import's own columns are set from (importedColumns), in whatever form a writer sends them. */
export interface ImportedValues<Value> {
  importId: Value;
  makerName: Value;
  makerPhoto: Value;
  /** a machine's verification state, `pending` */
  pending: Value;
}

/**
 * The columns an import sets on every row it writes, beside its `account_id` and the row's own: the
 * import that wrote it; on a listing the account's name and photo, on a machine a verification
 * `pending` (docs/rows.md). note: the one list of them, for the statements (rowTarget) and for
 * rows copied straight in (copy-new-rows.ts), in this order.
 */
export function importedColumns<Value>(kind: ImportKind, values: ImportedValues<Value>): Record<string, Value> {
  return kind === 'listings'
    ? { import_job_id: values.importId, maker_name: values.makerName, maker_photo_url: values.makerPhoto }
    : { import_job_id: values.importId, verification_status: values.pending };
}

export function rowTarget(sql: Sql | TransactionSql, kind: ImportKind, importId: string, maker: MakerSource): RowTarget {
  const fixed = importedColumns<Fragment>(kind, { importId: sql`${importId}`, makerName: maker.displayName, makerPhoto: maker.avatarUrl, pending: sql`${'pending'}` });
  if (kind === 'listings') return { table: 'listings', record: LISTING_RECORD, fixed, onUpdate: '' };
  return {
    table: 'machines',
    record: MACHINE_RECORD,
    fixed,
    onUpdate: `, verification_status = case when ${changes(MACHINE_IDENTITY)} then 'pending' else t.verification_status end`,
  };
}

/**
 * The insert of an import's rows, taken from `from` (which names them `r`), as `t`; the caller
 * adds what it returns. With `matchExternalIds`, a row whose `external_id` the account already
 * has in that table updates it instead, and only when something would change (`where
 * <changed>`): a row left as it was is neither returned nor counted. An archived row it matches
 * is restored (docs/catalogue.md#archive-and-delete), and counts as updated even when no field
 * changes.
 *
 * note: the rows are taken in `external_id` order, so two imports of one account that share ids
 * lock them in the same order: the later one waits for the first to commit, then updates, and
 * neither meets a deadlock or a unique violation. `t.xmax = 0` in a RETURNING tells a new row
 * from an updated one. The column lists are constants of this file, never input, so sql.unsafe
 * is safe here.
 */
function rowsInsert(sql: Sql | TransactionSql, accountId: string, target: RowTarget, from: Fragment, matchExternalIds: boolean, ids?: Fragment): Fragment {
  const { table, record, fixed, onUpdate } = target;
  const fixedNames = Object.keys(fixed);
  const columns = sql.unsafe([...(ids === undefined ? [] : ['id']), 'account_id', ...fixedNames, record.names].join(', '));
  const first = ids === undefined ? sql`${accountId}` : sql`${ids}, ${accountId}`;
  const values = Object.values(fixed).reduce<Fragment>((list, value) => sql`${list}, ${value}`, first);
  const insert = sql`insert into ${sql(table)} as t (${columns}) select ${values}, ${sql.unsafe(record.fromRecord)} from ${from}`;
  if (!matchExternalIds) return insert;
  // note: import_job_id names the import that last wrote the row; verification_status is set by onUpdate.
  const replaced = [...fixedNames.filter((name) => name !== 'verification_status'), ...record.replaced];
  const compared = replaced.filter((name) => name !== 'import_job_id');
  return sql`
    ${insert}
    order by r.external_id
    on conflict (account_id, external_id) where external_id is not null
    do update set ${sql.unsafe(replaced.map((name) => `${name} = excluded.${name}`).join(', '))}, updated_at = now(), archived_at = null${sql.unsafe(onUpdate)}
    where ${sql.unsafe(changes(compared))} or t.archived_at is not null`;
}

/**
 * Rows an import sent with `COPY` into its transaction's table of copied rows (copyRowsIn), in
 * place of their JSON.
 */
export interface CopiedRows {
  copiedKind: ImportKind;
  /** each row carries its request index first (`?return=rows`: encodeCopyRows with indexes) */
  indexed?: boolean;
}

/**
 * The temporary table `COPY` fills with one kind's rows: one per connection, created by the first
 * import that needs it and emptied at each commit. note: not created and dropped per import,
 * which would write and delete a catalogue row per column each time (the catalogue bloats, and
 * each import pays for it); pgbouncer's transaction pooling keeps it on its server connection.
 */
const copiedRowsTable = (kind: ImportKind, indexed = false) => `import_copied_${kind}${indexed ? '_indexed' : ''}`;

/** The request index an indexed table of copied rows holds before the row's columns. */
const INDEX_COLUMN = 'index integer';

/**
 * Sends an import's rows (copy-rows.ts encodeCopyRows, as bytes) with `COPY` into the table of
 * copied rows, for the statement that follows in the same transaction to read (`CopiedRows`).
 * note: the table's creation is sent without waiting for it, ahead of the `COPY`: one round trip.
 * Only the hand-over of the `COPY`'s end is awaited (handOverCopyEnd), not its answer.
 */
export async function copyRowsIn(tx: TransactionSql, kind: ImportKind, rows: Uint8Array, { indexed = false }: { indexed?: boolean } = {}): Promise<void> {
  const table = copiedRowsTable(kind, indexed);
  const record = kind === 'listings' ? LISTING_RECORD : MACHINE_RECORD;
  const definition = indexed ? `${INDEX_COLUMN}, ${record.definition}` : record.definition;
  const created = tx.unsafe(`create temporary table if not exists ${table} (${definition}) on commit delete rows`).execute();
  const writable = await tx.unsafe(`copy ${table} (${indexed ? 'index, ' : ''}${record.names}) from stdin`).writable();
  await created;
  await handOverCopyEnd(writable, rows);
}

/**
 * Writes the rows (none when left out) and the `COPY`'s end, and resolves once postgres.js has sent
 * the end, when it takes the next statement of the transaction (before, it refuses one:
 * COPY_IN_PROGRESS). note: not the stream's own end, which postgres.js 3.4 settles only when
 * PostgreSQL accepts the `COPY`: refused rows would leave it waiting, and its transaction holding
 * a connection, for good. The statement that follows waits for the `COPY` on the connection
 * instead, and fails with 25P02 when it was refused (isCopyRefused).
 */
export function handOverCopyEnd(writable: Writable, rows?: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => {
    const final = writable._final?.bind(writable);
    if (final === undefined) throw new Error('a COPY stream without its end step');
    writable._final = (callback) => {
      final(callback);
      resolve();
    };
    writable.once('error', reject);
    writable.end(rows);
  });
}

/** Whether `error` is the statement after copyRowsIn failing because the transaction's `COPY` was refused (malformed rows). */
export function isCopyRefused(error: unknown): boolean {
  return error instanceof postgres.PostgresError && error.code === PG_IN_FAILED_TRANSACTION;
}

/** SQLSTATE 25P02: a statement sent in a transaction an earlier statement failed. */
const PG_IN_FAILED_TRANSACTION = '25P02';

/**
 * The rows as `json_to_recordset` reads them, or as `COPY` left them (copyRowsIn), named `r`.
 * note: JSON goes as text cast to json: a parameter PostgreSQL types as json would make
 * postgres.js serialise the string again, as a JSON string. json, not jsonb: the rows are read
 * once, and json_to_recordset reads text a fifth faster than jsonb is built from it.
 */
function rowsOf(sql: Sql | TransactionSql, rows: string | CopiedRows, record: RowTarget['record']): Fragment {
  if (typeof rows !== 'string') return sql`${sql(copiedRowsTable(rows.copiedKind, rows.indexed))} as r`;
  return sql`json_to_recordset(${rows}::text::json) as r(${sql.unsafe(record.definition)})`;
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
 * Inserts every row with one set-based statement (rowsInsert). With `matchExternalIds`, rows
 * matched on `external_id` are updated when something changes, so `sent - inserted - updated`
 * were unchanged.
 */
export async function writeRows(
  tx: TransactionSql,
  input: { kind: ImportKind; importId: string; accountId: string; account: ImportingAccount; rows: string | StagedChunkRows | CopiedRows; matchExternalIds: boolean },
): Promise<RowsWritten> {
  const { kind, importId, accountId, account, rows, matchExternalIds } = input;
  const target = rowTarget(tx, kind, importId, { displayName: tx`${account.displayName}`, avatarUrl: tx`${account.avatarUrl}` });
  // note: a chunk staged as JSON is deleted by the statement that writes its rows (import-files.ts),
  // so its rows never travel to the worker and back; one staged as `COPY` text was taken and copied
  // in before (copyChunkIn).
  const staged = typeof rows !== 'string' && 'firstIndex' in rows ? rows : undefined;
  const taken = staged
    ? tx`taken as (delete from import_file_chunks where job_id = ${importId} and first_index = ${staged.firstIndex} returning body),`
    : tx``;
  const recordset = staged
    ? tx`taken cross join lateral json_to_recordset(taken.body::json) as r(${tx.unsafe(target.record.definition)})`
    : rowsOf(tx, rows as string | CopiedRows, target.record);
  const insert = rowsInsert(tx, accountId, target, tx`input as r`, matchExternalIds);
  if (!matchExternalIds) {
    const written = await tx`with ${taken} input as (select r.* from ${recordset}) ${insert}`;
    return { sent: written.count, inserted: written.count, updated: 0 };
  }
  const [counts] = await tx<RowsWritten[]>`
    with ${taken} input as (select r.* from ${recordset}),
    written as (${insert} returning (t.xmax = 0) as created)
    select (select count(*) from input)::int as sent,
           (count(*) filter (where created))::int as inserted,
           (count(*) filter (where not created))::int as updated
    from written`;
  return counts!;
}

/** What recordImportWithRows did. */
export interface ImportStatementOutcome extends RowsWritten {
  /** false when the account is gone */
  accountFound: boolean;
  /** true when this statement recorded the import, and so wrote its rows; otherwise it wrote nothing */
  recorded: boolean;
  /** with `returnRows`, when it recorded the import: each row's id and outcome, in request order */
  rows?: RowOutcome[] | null;
  /**
   * with `returnRows`: rows left unchanged whose row the statement's snapshot does not hold (another
   * import created it after the statement began); the caller must roll back and run again
   */
  raced?: number;
}

/**
 * Records the import of `importId` completed and writes all its rows (rowsInsert), in one statement,
 * or writes nothing at all: not when the account is gone, nor when the rows are not exactly
 * `rowCount`, nor when the import is recorded already. It reads the account's name and photo
 * itself. `started_at` is the statement's start (or its transaction's), `finished_at` the moment
 * the record is written; an import matched on `external_id` records its counts.
 *
 * note: one statement is one round trip, and on its own (autocommit) it is its own transaction:
 * the record and the rows commit together or not at all. The record is inserted last, once the
 * rows are written: its counts come from them. Exactly once rests on its primary key: an import
 * recorded before this statement began is seen (`admitted` is empty), and one whose transaction
 * commits while this statement runs makes the record's insert wait for it, then fail with a
 * unique violation on imports_pkey (isImportRecordTaken), which undoes the rows; either way the
 * caller then reads the record (findImportRecord).
 */
export async function recordImportWithRows(
  sql: Sql | TransactionSql,
  input: ImportOfRequest & { rowCount: number; rows: string | CopiedRows; matchExternalIds: boolean; returnRows?: boolean },
): Promise<ImportStatementOutcome> {
  const { kind, importId, accountId, rowCount, rows, matchExternalIds } = input;
  const target = rowTarget(sql, kind, importId, { displayName: sql`account.display_name`, avatarUrl: sql`account.avatar_url` });
  const outcomes = input.returnRows === true ? rowOutcomeSteps(sql, target, accountId, importId) : undefined;
  const insert = rowsInsert(sql, accountId, target, sql`input as r, admitted, account`, matchExternalIds, outcomes?.ids);
  const matchedCounts = matchExternalIds
    ? sql`counted.updated, sent.n - counted.inserted - counted.updated`
    : sql`null::int, null::int`;
  const [outcome] = await sql<ImportStatementOutcome[]>`
    with account as (select display_name, avatar_url from accounts where id = ${accountId}),
    input as (select r.*${outcomes?.inputIds ?? sql``} from ${rowsOf(sql, rows, target.record)}),
    sent as (select count(*)::int as n from input),
    admitted as (
      select from account, sent
      where sent.n = ${rowCount} and not exists (select from imports where job_id = ${importId})),
    written as (${insert} returning (t.xmax = 0) as created${outcomes?.returning ?? sql``}),
    counted as (
      select (count(*) filter (where created))::int as inserted, (count(*) filter (where not created))::int as updated from written),
    recorded as (
      insert into imports (job_id, account_id, kind, request_id, received, inserted, updated, unchanged, skipped, errors, state, created_at, started_at, finished_at)
      select ${importId}, ${accountId}, ${kind}, ${input.requestId}, ${input.total}, counted.inserted, ${matchedCounts},
             ${input.errors.length}, ${sql.json(input.errors)}, 'completed', ${createdAtOf(input)}, now(), clock_timestamp()
      from admitted, counted, sent
      returning job_id)${outcomes?.steps ?? sql``}
    select exists (select from account) as "accountFound", exists (select from recorded) as recorded,
           sent.n as sent, counted.inserted, counted.updated${outcomes?.answer ?? sql``}
    from sent, counted`;
  return outcome!;
}

/**
 * What recordImportWithRows adds for `?return=rows`: each row gets its id before the insert
 * (`new_id`, the table's own default, uuid_v7), so that RETURNING names the row each new id went
 * to; an updated row keeps its id and is named by its external_id. A row the upsert left as it
 * was is not returned (its `where` was false): its id is read back by external_id in the same
 * statement, from the snapshot the statement began with, and locked. One that snapshot does
 * not hold was created by another import after the statement began, and one whose lock finds it
 * deleted was deleted meanwhile (and may stand again under a new id, which the upsert met): both
 * are `raced`, which the caller rolls back and runs again (the next run sees the row as it is).
 * The lock keeps a row it names from being deleted until the commit. note: it is the upsert's own
 * (`for update`, which ON CONFLICT takes too), taken in `external_id` order as the upsert takes
 * it, so that two imports of the same rows wait for each other: a weaker lock shared by both
 * would deadlock when each went on to the upsert's. The outcomes are kept with the record
 * (row-outcomes.ts).
 * note: the rows come from an indexed table of copied rows (`index`, their request position).
 */
function rowOutcomeSteps(sql: Sql | TransactionSql, target: RowTarget, accountId: string, importId: string) {
  return {
    inputIds: sql`, uuid_v7() as new_id`,
    ids: sql`r.new_id`,
    returning: sql`, t.id, t.external_id`,
    steps: sql`,
    kept as (
      select t.id, t.external_id from admitted, ${sql(target.table)} as t
      where t.account_id = ${accountId} and t.external_id in (select external_id from input)
      order by t.external_id
      for update of t),
    outcomes as (
      select r.index, coalesce(wi.id, wu.id, kept.id) as id, r.external_id,
             case when wi.id is not null then 'inserted' when wu.id is not null then 'updated' else 'unchanged' end as outcome
      from admitted, input as r
      left join written as wi on wi.created and wi.id = r.new_id
      left join written as wu on not wu.created and wu.external_id = r.external_id
      left join kept on wi.id is null and wu.id is null and kept.external_id = r.external_id),
    ${keepOutcomes(sql, importId)}`,
    answer: sql`, ${outcomesAnswer(sql)} as rows, (select count(*) from outcomes where id is null)::int as raced`,
  };
}

/** Whether `error` is recordImportWithRows meeting a record another transaction committed meanwhile. */
export function isImportRecordTaken(error: unknown): boolean {
  return error instanceof postgres.PostgresError && error.code === PG_UNIQUE_VIOLATION && error.constraint_name === 'imports_pkey';
}
