import type { Sql } from '../infra/db.js';
import type { Account } from './accounts.js';
import type { Scope } from '../access/scopes.js';
import { compileAllowedIps, type AllowedIps } from '../access/allowed-ips.js';

export const ACTIVE_KEY_CAP = 20;
/** What a roll may bring an account to: the cap and the rolled key in its grace period (rollKey). */
export const ROLL_KEY_CAP = ACTIVE_KEY_CAP + 1;
/** The plain list (no query parameter): the 50 newest keys; also a page's size when `limit` is not given. */
export const KEY_LIST_LIMIT = 50;
/** The largest page `limit` asks for. */
export const KEY_PAGE_MAX = 100;

/** What a key is now (docs/access.md#key-lifecycle): an expired key is one whose `expires_at` has passed. */
export const KEY_STATES = ['active', 'expired', 'revoked'] as const;
export type KeyState = (typeof KEY_STATES)[number];

export interface ApiKeyRecord {
  id: string;
  label: string;
  keyPrefix: string;
  scopes: Scope[];
  isRevoked: boolean;
  status: KeyState;
  /** null: never */
  expiresAt: Date | null;
  /** canonical entries; null: any address */
  allowedIps: string[] | null;
  lastUsedAt: Date | null;
  createdAt: Date;
}

/** A key's state in SQL, at the statement's time. note: one place, for the lists and the answers alike. */
const KEY_STATE_SQL = "case when is_revoked then 'revoked' when expires_at <= now() then 'expired' else 'active' end";
/** The keys that count toward the cap and may be rolled or changed. */
const IS_ACTIVE_SQL = 'not is_revoked and (expires_at is null or expires_at > now())';

// note: constants of this file, never input, so sql.unsafe is safe with them.
const KEY_COLUMNS =
  `id, label, key_prefix as "keyPrefix", scopes, is_revoked as "isRevoked", ${KEY_STATE_SQL} as status, expires_at as "expiresAt", ` +
  'allowed_ips as "allowedIps", last_used_at as "lastUsedAt", created_at as "createdAt"';

export interface AuthenticatedKey {
  keyId: string;
  keyPrefix: string;
  scopes: Scope[];
  lastUsedAt: Date | null;
  /** null: never; shown by GET /v1/api/me */
  expiresAt: Date | null;
  /**
   * expiresAt as epoch milliseconds, compared with Date.now() on every request. note: a cached
   * key carries its end, so it is refused from that instant on every replica without a reload.
   */
  expiresAtMs: number | null;
  /** canonical entries, as GET /v1/api/me shows them; null: any address */
  allowedIpEntries: string[] | null;
  /** the same, parsed once here rather than on every request */
  allowedIps: AllowedIps | null;
  account: Account;
}

/**
 * The key with this hash, with its account, if it is not revoked; undefined when unknown or
 * revoked. An expired key is returned: the caller refuses it with its own code. One lookup of
 * the unique index on key_hash.
 */
export async function findActiveKeyByHash(sql: Sql, keyHash: Buffer): Promise<AuthenticatedKey | undefined> {
  const [row] = await sql<
    (Account & { keyId: string; keyPrefix: string; scopes: Scope[]; lastUsedAt: Date | null; expiresAt: Date | null; allowedIps: string[] | null })[]
  >`
    select k.id as "keyId", k.key_prefix as "keyPrefix", k.scopes, k.last_used_at as "lastUsedAt",
           k.expires_at as "expiresAt", k.allowed_ips as "allowedIps",
           a.id, a.display_name as "displayName", a.subscription_tier as "subscriptionTier", a.is_owner as "isOwner",
           a.has_completed_onboarding as "hasCompletedOnboarding", a.avatar_url as "avatarUrl"
    from api_keys k join accounts a on a.id = k.account_id
    where k.key_hash = ${keyHash} and not k.is_revoked`;
  if (!row) return undefined;
  const { keyId, keyPrefix, scopes, lastUsedAt, expiresAt, allowedIps, ...account } = row;
  return {
    keyId,
    keyPrefix,
    scopes,
    lastUsedAt,
    expiresAt,
    expiresAtMs: expiresAt === null ? null : expiresAt.getTime(),
    allowedIpEntries: allowedIps,
    allowedIps: compileAllowedIps(allowedIps),
    account,
  };
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
  /** null or left out: never */
  expiresAt?: Date | null;
  /** canonical entries; null or left out: any address */
  allowedIps?: string[] | null;
}

/**
 * Inserts the key unless the account already has ACTIVE_KEY_CAP active keys (neither revoked
 * nor expired). Locking the account row serialises concurrent creates and rolls of one account,
 * so the cap holds under races.
 */
export async function createKeyWithinCap(sql: Sql, input: NewApiKey): Promise<ApiKeyRecord | 'cap-reached'> {
  return sql.begin(async (tx) => {
    await tx`select 1 from accounts where id = ${input.accountId} for update`;
    const [{ active } = { active: 0 }] = await tx<{ active: number }[]>`
      select count(*)::int as active from api_keys where account_id = ${input.accountId} and ${tx.unsafe(IS_ACTIVE_SQL)}`;
    if (active >= ACTIVE_KEY_CAP) return 'cap-reached' as const;
    const [record] = await tx<ApiKeyRecord[]>`
      insert into api_keys (account_id, label, key_prefix, key_hash, scopes, expires_at, allowed_ips)
      values (${input.accountId}, ${input.label}, ${input.keyPrefix}, ${input.keyHash}, ${input.scopes}, ${input.expiresAt ?? null}, ${input.allowedIps ?? null})
      returning ${tx.unsafe(KEY_COLUMNS)}`;
    return record as ApiKeyRecord;
  });
}

export interface RolledKey {
  /** the new key: the old one's label, scopes and allowed addresses, no expiry */
  created: ApiKeyRecord;
  /** the old key, ending at its `expiresAt` */
  rolled: ApiKeyRecord;
}

/**
 * Rolls one of the account's keys (docs/access.md#rolling-a-key): a new key with its label,
 * scopes and allowed addresses, and the old one ending at the earlier of its own end and now
 * plus `expiresInSec` (0: now). Allowed at the cap: the account holds one key more until the old
 * one ends, and no more than that. 'cap-reached' when it already holds that one more and the roll
 * would keep the old key working: else rolling each new key again would keep any number of keys
 * working for up to 7 days. note: the account row is locked as a create locks it, so the cap a
 * concurrent create or roll counts sees the roll; the key's row is locked too, and `rolled_at`
 * marks it, so of concurrent rolls of one key exactly one finds it rollable.
 */
export async function rollKey(
  sql: Sql,
  accountId: string,
  keyId: string,
  expiresInSec: number,
  next: { keyPrefix: string; keyHash: Buffer },
): Promise<RolledKey | 'not-found' | 'not-rollable' | 'cap-reached'> {
  return sql.begin(async (tx) => {
    await tx`select 1 from accounts where id = ${accountId} for update`;
    const [old] = await tx<{ rollable: boolean; label: string; scopes: Scope[]; allowedIps: string[] | null }[]>`
      select ${tx.unsafe(IS_ACTIVE_SQL)} and rolled_at is null as rollable, label, scopes, allowed_ips as "allowedIps"
      from api_keys where id = ${keyId} and account_id = ${accountId} for update`;
    if (!old) return 'not-found' as const;
    if (!old.rollable) return 'not-rollable' as const;
    if (expiresInSec > 0) {
      const [{ active } = { active: 0 }] = await tx<{ active: number }[]>`
        select count(*)::int as active from api_keys where account_id = ${accountId} and ${tx.unsafe(IS_ACTIVE_SQL)}`;
      if (active >= ROLL_KEY_CAP) return 'cap-reached' as const;
    }
    const [rolled] = await tx<ApiKeyRecord[]>`
      update api_keys
      set rolled_at = now(), expires_at = least(expires_at, now() + make_interval(secs => ${expiresInSec}))
      where id = ${keyId}
      returning ${tx.unsafe(KEY_COLUMNS)}`;
    const [created] = await tx<ApiKeyRecord[]>`
      insert into api_keys (account_id, label, key_prefix, key_hash, scopes, allowed_ips)
      values (${accountId}, ${old.label}, ${next.keyPrefix}, ${next.keyHash}, ${old.scopes}, ${old.allowedIps})
      returning ${tx.unsafe(KEY_COLUMNS)}`;
    return { created: created as ApiKeyRecord, rolled: rolled as ApiKeyRecord };
  });
}

/** A change of a key (PATCH): a field left undefined stays as it is; `allowedIps` null allows any address. */
export interface KeyChange {
  label?: string;
  allowedIps?: string[] | null;
}

/**
 * Changes one of the account's active keys. 'not-found': not the account's key; 'ended':
 * revoked or expired (a change would not bring it back, and must not look as if it did).
 */
export async function changeKey(sql: Sql, accountId: string, keyId: string, change: KeyChange): Promise<ApiKeyRecord | 'not-found' | 'ended'> {
  return sql.begin(async (tx) => {
    const [key] = await tx<{ active: boolean }[]>`
      select ${tx.unsafe(IS_ACTIVE_SQL)} as active from api_keys where id = ${keyId} and account_id = ${accountId} for update`;
    if (!key) return 'not-found' as const;
    if (!key.active) return 'ended' as const;
    const setLabel = change.label !== undefined;
    const setIps = change.allowedIps !== undefined;
    const [record] = await tx<ApiKeyRecord[]>`
      update api_keys
      set label = case when ${setLabel} then ${change.label ?? null}::text else label end,
          allowed_ips = case when ${setIps} then ${change.allowedIps ?? null}::text[] else allowed_ips end
      where id = ${keyId}
      returning ${tx.unsafe(KEY_COLUMNS)}`;
    return record as ApiKeyRecord;
  });
}

/** Which of the account's keys a list shows: all of them (the default), or those of one state. */
export const KEY_STATUSES = ['all', ...KEY_STATES] as const;
export type KeyStatus = (typeof KEY_STATUSES)[number];

export interface KeyPage {
  keys: ApiKeyRecord[];
  hasMore: boolean;
}

const STATUS_FILTERS: Record<KeyStatus, string> = {
  all: '',
  active: `and ${IS_ACTIVE_SQL}`,
  expired: 'and not is_revoked and expires_at <= now()',
  revoked: 'and is_revoked',
};

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
  // `all` and `revoked`, the partial api_keys_account_active_idx `active` and `expired`, so an
  // account's revoked keys are never read to find its few active ones.
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
