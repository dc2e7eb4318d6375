import type { Sql } from '../infra/db.js';

/**
 * The statements that end an import's life: the purge of ended imports past their retention, and
 * the sweep of request imports that can no longer write. note: statements only; how often they
 * run, and how many batches a run may take, is the worker's (src/worker/import-retention.ts).
 *
 * note: each takes at most `limit` records, oldest first, and locks them with `skip locked`:
 * workers that run the same statement at once share the work instead of waiting on each other,
 * and a record that a transaction holds (a worker writing that import) is left for a later run.
 * The ids are chosen first, as an array (`= any(array(...))`): PostgreSQL then finds the
 * records to change by primary key; with `in (select ...)` it joined the batch against a scan
 * of the whole table (EXPLAIN on 100,000 imports).
 */

/**
 * Deletes up to `limit` imports that ended more than `retentionDays` days ago (an import recorded
 * before migration 0008 has no finished_at: it ended when it was recorded); returns how many.
 * note: the `state in (...)` and the `coalesce` are those of the partial index imports_ended_idx,
 * written the same way so that the planner can use it. The rows an import wrote keep its id in
 * `import_job_id` (migration 0008 dropped those foreign keys: nothing else is touched).
 */
export async function purgeEndedImports(sql: Sql, input: { retentionDays: number; limit: number }): Promise<number> {
  const purged = await sql`
    delete from imports
    where job_id = any(array(
      select job_id from imports
      where state in ('completed', 'failed', 'cancelled')
        and coalesce(finished_at, created_at) < now() - make_interval(days => ${input.retentionDays})
      order by coalesce(finished_at, created_at)
      limit ${input.limit}
      for update skip locked
    ))`;
  return purged.count;
}

/**
 * Settles up to `limit` imports answered 504 (unsettled_imports), oldest first: one whose record
 * shows in `imports` is simply settled (deleted from the table); one accepted more than
 * `olderThanMs` ago without a record can never write (the caller picks an age past which its rows
 * are gone from Redis) and is recorded `failed`, ended now. Returns how many were settled and how
 * many of them recorded failed. note: `skip locked` leaves an entry another worker is settling;
 * a job whose worker is writing its record right now makes the insert wait for that transaction
 * and then find the record (`on conflict do nothing`), so a completed import is never turned
 * failed. Once recorded failed, the job writes nothing (ImportAbandonedError).
 */
export async function settleUnsettledImports(sql: Sql, input: { olderThanMs: number; limit: number }): Promise<{ settled: number; failed: number }> {
  const [counts] = await sql<{ settled: number; failed: number }[]>`
    with batch as (
      select job_id from unsettled_imports as u
      where exists (select 1 from imports as i where i.job_id = u.job_id)
         or u.created_at < now() - make_interval(secs => ${input.olderThanMs / 1_000})
      order by u.created_at
      limit ${input.limit}
      for update skip locked
    ),
    settled as (
      delete from unsettled_imports as u using batch where u.job_id = batch.job_id returning u.*
    ),
    failed as (
      insert into imports (job_id, account_id, kind, action, request_id, received, inserted, skipped, errors, state, created_at, finished_at)
      select job_id, account_id, kind, action, request_id, received, 0, skipped, errors, 'failed', created_at, now() from settled
      on conflict (job_id) do nothing
      returning job_id
    )
    select (select count(*) from settled)::int as settled, (select count(*) from failed)::int as failed`;
  return counts!;
}
