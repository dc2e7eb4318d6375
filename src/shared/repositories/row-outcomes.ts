import type { Fragment, Sql, TransactionSql } from '../infra/db.js';
import type { RowOutcome } from '../import/row-outcomes.js';

/**
 * Each row's id and outcome kept with an import that asked for them (`?return=rows`,
 * migrations/0019_import_row_outcomes.sql): written in the transaction that writes the rows,
 * read back by a replay or a rerun. note: statements only, and used only when asked: an import
 * that did not ask writes and reads nothing here.
 */

/**
 * The common table expression that keeps the statement's `outcomes` (index, id, external_id,
 * outcome) once its `recorded` step recorded the import: nothing when it did not (grouped by the
 * record, so that no record means no row rather than one of nulls), nor when some row has no id
 * (a race its caller rolls back: the table refuses a null id, for good).
 */
export function keepOutcomes(sql: Sql | TransactionSql, importId: string): Fragment {
  return sql`
    kept_outcomes as (
      insert into import_row_outcomes (job_id, indexes, ids, external_ids, outcomes)
      select ${importId}, array_agg(o.index order by o.index), array_agg(o.id order by o.index),
             array_agg(o.external_id order by o.index), array_agg(o.outcome order by o.index)
      from outcomes as o, recorded
      where not exists (select from outcomes as unnamed where unnamed.id is null)
      group by recorded.job_id)`;
}

/** The statement's `outcomes` as the answer lists them, in request order (null when there are none). */
export function outcomesAnswer(sql: Sql | TransactionSql): Fragment {
  return sql`(
    select json_agg(json_build_object('index', o.index, 'id', o.id, 'external_id', o.external_id, 'outcome', o.outcome) order by o.index)
    from outcomes as o)`;
}

/** Keeps the outcomes of an archive or delete, in the transaction that recorded it. */
export async function recordRowOutcomes(tx: TransactionSql, importId: string, rows: readonly RowOutcome[]): Promise<void> {
  await tx`
    insert into import_row_outcomes (job_id, indexes, ids, external_ids, outcomes)
    values (${importId}, ${tx.array(rows.map((row) => row.index))}::int[], ${tx.array(rows.map((row) => row.id!))}::uuid[],
            ${tx.array(rows.map((row) => row.external_id) as string[])}::text[], ${tx.array(rows.map((row) => row.outcome))}::text[])`;
}

/** The outcomes kept with an import, in request order; undefined when it kept none (it did not ask, or a worker of an earlier version wrote it). */
export async function findRowOutcomes(sql: Sql | TransactionSql, importId: string): Promise<RowOutcome[] | undefined> {
  const [kept] = await sql<{ rows: RowOutcome[] | null }[]>`
    select (
      select json_agg(json_build_object('index', u.index, 'id', u.id, 'external_id', u.external_id, 'outcome', u.outcome) order by u.index)
      from unnest(k.indexes, k.ids, k.external_ids, k.outcomes) as u(index, id, external_id, outcome)) as rows
    from import_row_outcomes as k
    where k.job_id = ${importId}`;
  return kept === undefined ? undefined : (kept.rows ?? []);
}
