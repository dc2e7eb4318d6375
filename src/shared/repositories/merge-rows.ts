import type { Fragment, TransactionSql } from '../infra/db.js';
import type { ImportKind } from '../import/import-kinds.js';
import type { RowError } from '../rows/row-errors.js';
import { createdAtOf, type ImportOfRequest } from './import-records.js';
import { MACHINE_IDENTITY, rowTarget, type RowTarget } from './imports.js';
import type { RowOutcome } from '../import/row-outcomes.js';
import { keepOutcomes, outcomesAnswer } from './row-outcomes.js';

/**
 * The statements of an import with `update=merge` (docs/catalogue.md#merge): each row changes only
 * the fields it carries (`present`) in the row of the account its `external_id` names, restoring
 * it when archived; a row that names none is created when it is whole (no `missing` field), and
 * fails naming its missing fields otherwise. note: statements only; the transaction around them
 * is the worker's (src/worker/write-import.ts).
 */

/** A merge row that could neither merge (no row has its id) nor be created (fields missing). */
export interface MergeRowFailure {
  index: number;
  externalId: string;
  missing: string[];
}

/** What recordMergeWithRows did. */
export interface MergeStatementOutcome {
  accountFound: boolean;
  /** true when this statement recorded the import, and so wrote its rows */
  recorded: boolean;
  sent: number;
  inserted: number;
  updated: number;
  unchanged: number;
  failed: MergeRowFailure[];
  /**
   * whole rows whose external_id another transaction took after this statement began: neither
   * merged nor created; the caller must roll back and run again
   */
  raced: number;
  /** with `returnRows`, when it recorded the import: each merged or created row's id and outcome, in request order */
  rows?: RowOutcome[] | null;
}

/** `case when 'c' = any(r.present) then r.c else t.c end`: the merged value of column c. */
const merged = (column: string) => `case when '${column}' = any(r.present) then r.${column} else t.${column} end`;

/**
 * The `set` list of a merge's update, and the condition that it changes something. note: the
 * columns are constants of the row targets, never input; a machine whose identity changes goes
 * back to `pending`, as in a full upsert.
 */
function mergeAssignments(target: RowTarget): { set: string; changes: string } {
  const columns = target.record.replaced;
  const fixed = Object.keys(target.fixed).filter((name) => name !== 'verification_status' && name !== 'import_job_id');
  const set = [...columns.map((column) => `${column} = ${merged(column)}`), ...fixed.map((name) => `${name} = f.${name}`)];
  if (target.table === 'machines') {
    const identityChanges = `(${MACHINE_IDENTITY.map(merged).join(', ')}) is distinct from (${MACHINE_IDENTITY.map((c) => `t.${c}`).join(', ')})`;
    set.push(`verification_status = case when ${identityChanges} then 'pending' else t.verification_status end`);
  }
  const compared = [...columns.map(merged), ...fixed.map((name) => `f.${name}`)];
  const current = [...columns, ...fixed].map((name) => `t.${name}`);
  return { set: set.join(', '), changes: `(${compared.join(', ')}) is distinct from (${current.join(', ')})` };
}

/**
 * Records the merge import of `importId` completed and writes its rows, in one statement, or writes
 * nothing: not when the account is gone, nor when the rows are not exactly `rowCount`, nor when
 * the import is recorded already (exactly once on the record's primary key, as
 * recordImportWithRows). The record counts the failed rows as skipped; their errors are the
 * caller's to add (recordMergeErrors), with the request's.
 *
 * note: the rows an id names are locked in `external_id` order before they change, so that two
 * imports of one account that share ids wait for each other rather than deadlock; a row deleted
 * meanwhile is not matched (the lock skips it), and a whole row then creates it again. The update
 * computes the merged values from the row as locked, never from an older version.
 */
export async function recordMergeWithRows(
  tx: TransactionSql,
  input: ImportOfRequest & { rowCount: number; rows: string; returnRows?: boolean },
): Promise<MergeStatementOutcome> {
  const { kind, importId, accountId, rowCount } = input;
  const target = rowTarget(tx, kind, importId, { displayName: tx`account.display_name`, avatarUrl: tx`account.avatar_url` });
  const [outcome] = await tx<MergeOutcomeRow[]>`
    with account as (select display_name, avatar_url from accounts where id = ${accountId}),
    input as (select r.* from json_to_recordset((${input.rows}::text::json)->'merge') as r(${tx.unsafe(mergeRecord(target))})),
    sent as (select count(*)::int as n from input),
    admitted as (
      select from account, sent
      where sent.n = ${rowCount} and not exists (select from imports where job_id = ${importId})),
    ${mergeSteps(tx, target, accountId, importId)},
    recorded as (
      insert into imports (job_id, account_id, kind, request_id, received, inserted, updated, unchanged, skipped, errors, state, merge,
                           created_at, started_at, finished_at)
      select ${importId}, ${accountId}, ${kind satisfies ImportKind}, ${input.requestId}, ${input.total}, counted.inserted, counted.updated, counted.unchanged,
             ${input.errors.length} + counted.failed, ${tx.json(input.errors)}, 'completed', true, ${createdAtOf(input)}, now(), clock_timestamp()
      from admitted, counted
      returning job_id)${input.returnRows === true ? mergeOutcomeSteps(tx, importId) : tx``}
    select exists (select from account) as "accountFound", exists (select from recorded) as recorded, sent.n as sent, ${mergeCounts(tx)}
           ${input.returnRows === true ? tx`, ${outcomesAnswer(tx)} as rows` : tx``}
    from sent, counted`;
  return outcomeOf(outcome!);
}

/**
 * Merges the rows of a merge file import's staged chunk that starts at `firstIndex`, and deletes
 * the chunk, in one statement (as writeRows does for a chunk of whole rows). note: the chunk's
 * transaction, the record's counts and the failed rows' errors are the caller's.
 */
export async function mergeChunkRows(
  tx: TransactionSql,
  input: { kind: ImportKind; importId: string; accountId: string; firstIndex: number },
): Promise<Omit<MergeStatementOutcome, 'accountFound' | 'recorded'>> {
  const { kind, importId, accountId } = input;
  const target = rowTarget(tx, kind, importId, { displayName: tx`account.display_name`, avatarUrl: tx`account.avatar_url` });
  const [outcome] = await tx<MergeOutcomeRow[]>`
    with account as (select display_name, avatar_url from accounts where id = ${accountId}),
    taken as (delete from import_file_chunks where job_id = ${importId} and first_index = ${input.firstIndex} returning body),
    input as (select r.* from taken cross join lateral json_to_recordset(taken.body::json) as r(${tx.unsafe(mergeRecord(target))})),
    admitted as (select from account),
    ${mergeSteps(tx, target, accountId, importId)}
    select (select count(*) from input)::int as sent, ${mergeCounts(tx)}
    from counted`;
  return outcomeOf(outcome!);
}

/**
 * What recordMergeWithRows adds for `?return=rows`: each row it merged into (`matched`, its id as
 * locked: `updated` when the update returned its index, else `unchanged`) or created (the id the
 * insert returned, named by its external_id, which every merge row has and no two share), kept
 * with the record (row-outcomes.ts). The failed rows are in the errors only.
 */
function mergeOutcomeSteps(tx: TransactionSql, importId: string): Fragment {
  return tx`,
    outcomes as (
      select g.index, g.id, r.external_id, case when u.index is null then 'unchanged' else 'updated' end as outcome
      from matched as g join input as r on r.index = g.index left join updated as u on u.index = g.index
      union all
      select r.index, i.id, r.external_id, 'inserted' from inserted as i join creatable as r on r.external_id = i.external_id),
    ${keepOutcomes(tx, importId)}`;
}

type MergeOutcomeRow = Omit<MergeStatementOutcome, 'failed'> & { failed: MergeRowFailure[] | null };

const outcomeOf = (row: MergeOutcomeRow): MergeStatementOutcome => ({ ...row, failed: row.failed ?? [] });

/** A merge row's columns as json_to_recordset reads them: the kind's, and what merge-row.ts adds. */
const mergeRecord = (target: RowTarget) => `${target.record.definition}, present text[], missing text[], index integer`;

/**
 * The steps of a merge, as common table expressions after `account`, `input` (the merge rows, as
 * `r`) and `admitted` (one row when the statement may write, else none): lock the rows the ids
 * name (`matched`), merge into them (`updated`), create the whole rows that name none
 * (`inserted`), list the rest (`failed`), and count it all (`counted`).
 */
function mergeSteps(tx: TransactionSql, target: RowTarget, accountId: string, importId: string): Fragment {
  const { table, record, fixed } = target;
  const fixedNames = Object.keys(fixed);
  const fixedValues = Object.entries(fixed).reduce<Fragment>((list, [name, value], i) => (i === 0 ? tx`${value} as ${tx(name)}` : tx`${list}, ${value} as ${tx(name)}`), tx``);
  const { set, changes } = mergeAssignments(target);
  return tx`
    matched as (
      select t.id, r.index from admitted, input as r join ${tx(table)} as t on t.account_id = ${accountId} and t.external_id = r.external_id
      order by t.external_id
      for update of t),
    f as (select ${fixedValues} from account),
    updated as (
      update ${tx(table)} as t set ${tx.unsafe(set)}, import_job_id = ${importId}, updated_at = now(), archived_at = null
      from matched as g, input as r, f
      where t.id = g.id and r.index = g.index and (${tx.unsafe(changes)} or t.archived_at is not null)
      returning r.index),
    creatable as (
      select r.* from input as r, admitted
      where cardinality(r.missing) = 0 and not exists (select from matched as g where g.index = r.index)),
    inserted as (
      insert into ${tx(table)} as t (account_id, ${tx.unsafe(fixedNames.join(', '))}, ${tx.unsafe(record.names)})
      select ${accountId}, ${tx.unsafe(fixedNames.map((name) => `f.${name}`).join(', '))}, ${tx.unsafe(record.fromRecord)} from creatable as r, f
      order by r.external_id
      on conflict (account_id, external_id) where external_id is not null do nothing
      returning t.id, t.external_id),
    failed as (
      select r.index, r.external_id as "externalId", r.missing from input as r, admitted
      where cardinality(r.missing) > 0 and not exists (select from matched as g where g.index = r.index)),
    counted as (
      select (select count(*) from inserted)::int as inserted, (select count(*) from updated)::int as updated,
             (select count(*) from matched)::int - (select count(*) from updated)::int as unchanged,
             (select count(*) from failed)::int as failed, (select count(*) from creatable)::int as creatable)`;
}

/** The counts a merge statement returns, from `counted` and `failed`. */
function mergeCounts(tx: TransactionSql): Fragment {
  return tx`counted.inserted, counted.updated, counted.unchanged, counted.creatable - counted.inserted as raced,
           (select json_agg(failure order by failure.index) from failed as failure) as failed`;
}

/** Sets the errors of a merge import recorded by recordMergeWithRows: the request's and the rows that failed there, by index. */
export async function recordMergeErrors(tx: TransactionSql, importId: string, errors: readonly RowError[]): Promise<void> {
  await tx`update imports set errors = ${tx.json(errors)} where job_id = ${importId}`;
}

/** The error of a merge row that could neither merge nor be created: its missing fields, each `required`. */
export function mergeFailureError(failure: MergeRowFailure): RowError {
  const details = failure.missing.map((field) => ({ field, code: 'required' as const, message: 'required' }));
  return { index: failure.index, external_id: failure.externalId, reason: details.map((d) => `${d.field}: ${d.message}`).join('; '), details };
}
