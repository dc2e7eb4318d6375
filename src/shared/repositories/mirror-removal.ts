import type { Fragment, TransactionSql } from '../infra/db.js';
import type { ImportKind } from '../import/import-kinds.js';

/**
 * The statements of a mirror's removal (docs/catalogue.md#mirror): once its file is written, the
 * account's rows of its kind whose external_id appears on no line are archived (or deleted),
 * behind a guard. note: statements only; the removal runs in the transaction that completes the
 * import (src/worker/write-file-chunk.ts), so that it happens exactly once with it.
 */

/** What a mirror removes, and its guard: a percentage of the account's active rows with an external_id. */
export interface MirrorRemoval {
  missing: 'archive' | 'delete';
  maxPercent: number;
}

/** How a removal ended: `done` (its rows removed), or `held` by its guard (the rows it would have removed). */
export interface RemovalOutcome {
  state: 'done' | 'held';
  rows: number;
}

/**
 * The catalogue a mirror's file replaces, as a statement counting it: the account's active rows
 * of the kind that have an external_id (decisions K.6), counted as the upload begins and kept as
 * the guard's base, so that rows the file itself inserts or restores never count toward it.
 */
export function replacedCatalogueCount(tx: TransactionSql, accountId: string, kind: ImportKind): Fragment {
  return tx`select count(*)::int from ${tx(kind)} as t where t.account_id = ${accountId} and t.external_id is not null and t.archived_at is null`;
}

/** Records the ids the failed lines of a mirror's file carried: their rows keep their place. */
export async function recordSeenExternalIds(tx: TransactionSql, importId: string, externalIds: readonly string[]): Promise<void> {
  if (externalIds.length === 0) return;
  await tx`
    insert into import_file_seen_ids (job_id, external_id)
    select ${importId}, id from unnest(${tx.array(externalIds as string[])}::text[]) as id
    on conflict do nothing`;
}

/**
 * Removes the rows the mirror's file left out, or holds the removal (decisions K.6): when they are
 * more than `maxPercent` percent of the catalogue the file replaces (`base`: the account's active
 * rows of the kind with an external_id as the upload began; `max_removal=100` turns the
 * percentage off), or when a line of the file could not be read well enough to know its id (not
 * a JSON object, or a CSV record whose cell count differs from the header's). Rows without an
 * external_id are never touched. A row is left out when no line carried its id, valid or not,
 * and nothing wrote it since the upload began (`since`): a row another import created, changed or
 * restored meanwhile is newer than the file, and stays; an upsert that changed nothing left its
 * `updated_at` as it was (imports.ts), so it does not make a row newer.
 *
 * note: one statement. The rows left out are found once, by anti joins against the ids the file
 * claimed and the ids its failed lines carried (a count with a correlated subquery per row probed
 * the staged ids a million times: 6 s for a million rows), then counted, then removed in the same
 * statement when the guard lets it. The removal reads each row again as it locks it (the time
 * condition is the update's or delete's own), so a row another import writes meanwhile waits for
 * it and then stays. An import recorded before the base was kept (migration 0018) has none: its
 * guard counts the active rows now, as it did.
 */
export async function removeRowsLeftOut(
  tx: TransactionSql,
  input: { importId: string; accountId: string; kind: ImportKind; removal: MirrorRemoval; since: Date; base: number | null },
): Promise<RemovalOutcome> {
  const { importId, accountId, kind, removal, since, base } = input;
  const archiving = removal.missing === 'archive';
  const [outcome] = await tx<{ leftOut: number; held: boolean; removed: number }[]>`
    with left_out as materialized (
      select t.id from ${tx(kind)} as t
      where t.account_id = ${accountId} and t.external_id is not null
        and ${archiving ? tx`t.archived_at is null` : tx`true`}
        and coalesce(t.updated_at, t.created_at) < ${since}
        and not exists (select from import_file_external_ids as c where c.job_id = ${importId} and c.external_id = t.external_id)
        and not exists (select from import_file_seen_ids as s where s.job_id = ${importId} and s.external_id = t.external_id)),
    guard as (
      select (select count(*) from left_out)::int as left_out,
             ${base === null ? tx`(${replacedCatalogueCount(tx, accountId, kind)})` : tx`${base}::int`} as base,
             exists (
               select from import_file_errors as e
               where e.job_id = ${importId} and e.error->'details'->0->>'code' = 'not_an_object') as unreadable),
    allowed as (select from guard where not guard.unreadable and (${removal.maxPercent}::int = 100 or guard.left_out * 100 <= guard.base * ${removal.maxPercent})),
    removed as (${
      archiving
        ? tx`
          update ${tx(kind)} as t set archived_at = now(), updated_at = now()
          from left_out as l, allowed
          where t.id = l.id and t.archived_at is null and coalesce(t.updated_at, t.created_at) < ${since}
          returning 1`
        : tx`
          delete from ${tx(kind)} as t
          using left_out as l, allowed
          where t.id = l.id and coalesce(t.updated_at, t.created_at) < ${since}
          returning 1`
    })
    select guard.left_out as "leftOut", not exists (select from allowed) as held, (select count(*) from removed)::int as removed
    from guard`;
  const { leftOut, held, removed } = outcome!;
  return held ? { state: 'held', rows: leftOut } : { state: 'done', rows: removed };
}

/** Records how the removal ended; the rows removed count in the import's `archived` or `deleted`. */
export async function recordRemoval(tx: TransactionSql, importId: string, missing: MirrorRemoval['missing'], outcome: RemovalOutcome): Promise<void> {
  const removed = outcome.state === 'done' ? outcome.rows : 0;
  await tx`
    update imports set removal_state = ${outcome.state}, removal_rows = ${outcome.rows},
      archived = coalesce(archived, 0) + ${missing === 'archive' ? removed : 0},
      deleted = coalesce(deleted, 0) + ${missing === 'delete' ? removed : 0}
    where job_id = ${importId}`;
}
