import type { Sql } from '../infra/db.js';
import type { Account } from './accounts.js';
import type { Scope } from '../access/scopes.js';

export const ACTIVE_KEY_CAP = 20;
/** The plain list (no query parameter): the 50 newest keys; also a page's size when `limit` is not given. */
export const KEY_LIST_LIMIT = 50;
/** The largest page `limit` asks for. */
export const KEY_PAGE_MAX = 100;

export interface ApiKeyRecord {
  id: string;
  label: string;
  keyPrefix: string;
  scopes: Scope[];
  isRevoked: boolean;
  lastUsedAt: Date | null;
  createdAt: Date;
}

// note: a constant of this file, never input, so sql.unsafe is safe with it.
const KEY_COLUMNS = 'id, label, key_prefix as "keyPrefix", scopes, is_revoked as "isRevoked", last_used_at as "lastUsedAt", created_at as "createdAt"';

export interface AuthenticatedKey {
  keyId: string;
  keyPrefix: string;
  scopes: Scope[];
  lastUsedAt: Date | null;
  account: Account;
}

/** The active key with this hash, with its account; undefined when unknown or revoked. */
export async function findActiveKeyByHash(sql: Sql, keyHash: Buffer): Promise<AuthenticatedKey | undefined> {
  const [row] = await sql<
    (Account & { keyId: string; keyPrefix: string; scopes: Scope[]; lastUsedAt: Date | null })[]
  >`
    select k.id as "keyId", k.key_prefix as "keyPrefix", k.scopes, k.last_used_at as "lastUsedAt",
           a.id, a.display_name as "displayName", a.subscription_tier as "subscriptionTier", a.is_owner as "isOwner",
           a.has_completed_onboarding as "hasCompletedOnboarding", a.avatar_url as "avatarUrl"
    from api_keys k join accounts a on a.id = k.account_id
    where k.key_hash = ${keyHash} and not k.is_revoked`;
  if (!row) return undefined;
  const { keyId, keyPrefix, scopes, lastUsedAt, ...account } = row;
  return { keyId, keyPrefix, scopes, lastUsedAt, account };
}

/**
 * Records the use of some keys, in one statement, at most about once a minute per key: the
 * condition makes a second replica's write in the same minute a no-op. note: `skip locked`: a key
 * whose row another replica is writing at that moment is being given the same time, so this
 * statement neither waits for it nor can deadlock with it.
 */
export async function touchKeysLastUsed(sql: Sql, keyIds: readonly string[]): Promise<void> {
  await sql`
    update api_keys set last_used_at = now()
    where id in (
      select id from api_keys
      where id = any(${sql.array(keyIds as string[])}::uuid[]) and (last_used_at is null or last_used_at < now() - interval '1 minute')
      for update skip locked
    )`;
}

export interface NewApiKey {
  accountId: string;
  label: string;
  scopes: Scope[];
  keyPrefix: string;
  keyHash: Buffer;
}

/**
 * Inserts the key unless the account already has ACTIVE_KEY_CAP active keys. Locking the
 * account row serialises concurrent creates of one account, so the cap holds under races.
 */
export async function createKeyWithinCap(sql: Sql, input: NewApiKey): Promise<ApiKeyRecord | 'cap-reached'> {
  return sql.begin(async (tx) => {
    await tx`select 1 from accounts where id = ${input.accountId} for update`;
    const [{ active } = { active: 0 }] = await tx<{ active: number }[]>`
      select count(*)::int as active from api_keys where account_id = ${input.accountId} and not is_revoked`;
    if (active >= ACTIVE_KEY_CAP) return 'cap-reached' as const;
    const [record] = await tx<ApiKeyRecord[]>`
      insert into api_keys (account_id, label, key_prefix, key_hash, scopes)
      values (${input.accountId}, ${input.label}, ${input.keyPrefix}, ${input.keyHash}, ${input.scopes})
      returning ${tx.unsafe(KEY_COLUMNS)}`;
    return record as ApiKeyRecord;
  });
}

/** Which of the account's keys a list shows: all of them (the default), or the active or revoked ones. */
export const KEY_STATUSES = ['all', 'active', 'revoked'] as const;
export type KeyStatus = (typeof KEY_STATUSES)[number];

export interface KeyPage {
  keys: ApiKeyRecord[];
  hasMore: boolean;
}

const STATUS_FILTERS: Record<KeyStatus, string> = { all: '', active: 'and not is_revoked', revoked: 'and is_revoked' };

/**
 * The account's keys of `status`, newest first (ties by id), `limit` of them after the key
 * `startingAfter` (a key id); undefined when that is no key of the account. The cursor may be of
 * any status, so a key revoked between two pages still marks where the next one starts.
 * note: the cursor's place is compared in SQL, not sent back as a Date: created_at holds
 * microseconds a Date would drop, and keys made within the same millisecond would be skipped.
 */
export async function listKeys(sql: Sql, accountId: string, page: { limit: number; status: KeyStatus; startingAfter?: string }): Promise<KeyPage | undefined> {
  let after = sql``;
  if (page.startingAfter !== undefined) {
    const [cursor] = await sql`select 1 from api_keys where id = ${page.startingAfter} and account_id = ${accountId}`;
    if (!cursor) return undefined;
    after = sql`and (created_at, id) < (select created_at, id from api_keys where id = ${page.startingAfter})`;
  }
  // note: one more than asked says whether there is more. api_keys_account_created_idx serves
  // `all` and `revoked`, the partial api_keys_account_active_idx `active`, so an account's
  // revoked keys are never read to find its few active ones.
  const rows = await sql<ApiKeyRecord[]>`
    select ${sql.unsafe(KEY_COLUMNS)}
    from api_keys where account_id = ${accountId} ${sql.unsafe(STATUS_FILTERS[page.status])} ${after}
    order by created_at desc, id desc
    limit ${page.limit + 1}`;
  return { keys: rows.slice(0, page.limit), hasMore: rows.length > page.limit };
}

/** Revokes one of the account's keys; revoking twice is harmless. undefined: not the account's key. */
export async function revokeKey(sql: Sql, accountId: string, keyId: string): Promise<ApiKeyRecord | undefined> {
  const [record] = await sql<ApiKeyRecord[]>`
    update api_keys set is_revoked = true, revoked_at = coalesce(revoked_at, now())
    where id = ${keyId} and account_id = ${accountId}
    returning ${sql.unsafe(KEY_COLUMNS)}`;
  return record;
}
