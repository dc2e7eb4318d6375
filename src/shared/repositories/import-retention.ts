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
 * Records as `failed` (ended now) up to `limit` request imports still `queued` or `running` that
 * were accepted more than `olderThanMs` ago; returns how many. The caller picks an age past
 * which their rows are gone from Redis: such a job can never write, and the import would read
 * `running` forever. note: uses imports_unfinished_idx (same `state in (...)`). A worker's
 * transaction that completes one of them holds its record: `skip locked` leaves it to that
 * transaction, and a record completed since the statement began is read again when it is locked
 * and no longer matches, so a completed import is never turned failed. Once swept, the job finds
 * its record failed and writes nothing (ImportAbandonedError).
 */
export async function failAbandonedImports(sql: Sql, input: { olderThanMs: number; limit: number }): Promise<number> {
  const swept = await sql`
    update imports set state = 'failed', finished_at = now()
    where job_id = any(array(
      select job_id from imports
      where state in ('queued', 'running')
        and created_at < now() - make_interval(secs => ${input.olderThanMs / 1_000})
        and source = 'request'
      order by created_at
      limit ${input.limit}
      for update skip locked
    ))
      and state in ('queued', 'running')`;
  return swept.count;
}
