import type { Sql, TransactionSql } from '../infra/db.js';

export const IDEMPOTENCY_KEY_TTL_HOURS = 24;

export interface IdempotencyClaim {
  /** true when this request is the first (or the first after the key expired) */
  claimed: boolean;
  importId: string;
  requestHash: Buffer;
}

/**
 * Claims the key for the import `importId`, or returns the earlier claim when one younger than 24 hours
 * exists. An expired claim is taken over in the same statement.
 */
export async function claimIdempotencyKey(
  sql: Sql | TransactionSql,
  input: { accountId: string; key: string; requestHash: Buffer; importId: string },
): Promise<IdempotencyClaim> {
  const [claimed] = await sql<{ job_id: string; request_hash: Buffer }[]>`
    insert into idempotency_keys (account_id, idempotency_key, request_hash, job_id)
    values (${input.accountId}, ${input.key}, ${input.requestHash}, ${input.importId})
    on conflict (account_id, idempotency_key) do update
      set request_hash = excluded.request_hash, job_id = excluded.job_id, created_at = now()
      where idempotency_keys.created_at < now() - make_interval(hours => ${IDEMPOTENCY_KEY_TTL_HOURS})
    returning job_id, request_hash`;
  if (claimed) return { claimed: true, importId: claimed.job_id, requestHash: claimed.request_hash };
  // note: a separate statement, so its snapshot sees a claim a concurrent request just committed.
  const [earlier] = await sql<{ job_id: string; request_hash: Buffer }[]>`
    select job_id, request_hash from idempotency_keys
    where account_id = ${input.accountId} and idempotency_key = ${input.key}`;
  if (!earlier) throw new Error('idempotency claim vanished between two statements');
  return { claimed: false, importId: earlier.job_id, requestHash: earlier.request_hash };
}

/** Whether the account has claimed the key (within its 24 hours): a request with it may be a replay. */
export async function isIdempotencyKeyClaimed(sql: Sql | TransactionSql, input: { accountId: string; key: string }): Promise<boolean> {
  const [claim] = await sql`
    select 1 from idempotency_keys
    where account_id = ${input.accountId} and idempotency_key = ${input.key}
      and created_at >= now() - make_interval(hours => ${IDEMPOTENCY_KEY_TTL_HOURS})`;
  return claim !== undefined;
}

/**
 * Frees a claim whose import is recorded as having written nothing (its job can never write), unless
 * another job has claimed the key since.
 */
export async function releaseIdempotencyKey(sql: Sql, input: { accountId: string; key: string; importId: string }): Promise<void> {
  await sql`
    delete from idempotency_keys
    where account_id = ${input.accountId} and idempotency_key = ${input.key} and job_id = ${input.importId}`;
}

export async function deleteExpiredIdempotencyKeys(sql: Sql): Promise<number> {
  const deleted = await sql`
    delete from idempotency_keys
    where created_at < now() - make_interval(hours => ${IDEMPOTENCY_KEY_TTL_HOURS})`;
  return deleted.count;
}
