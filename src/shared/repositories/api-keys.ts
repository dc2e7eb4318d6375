import type { Sql } from '../infra/db.js';
import type { Account } from './accounts.js';
import type { Scope } from '../access/scopes.js';

export const ACTIVE_KEY_CAP = 20;
export const KEY_LIST_LIMIT = 50;

export interface ApiKeyRecord {
  id: string;
  label: string;
  key_prefix: string;
  scopes: Scope[];
  is_revoked: boolean;
  last_used_at: Date | null;
  created_at: Date;
}

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
    (Account & { key_id: string; key_prefix: string; scopes: Scope[]; last_used_at: Date | null })[]
  >`
    select k.id as key_id, k.key_prefix, k.scopes, k.last_used_at,
           a.id, a.display_name, a.subscription_tier, a.is_owner, a.has_completed_onboarding, a.avatar_url
    from api_keys k join accounts a on a.id = k.account_id
    where k.key_hash = ${keyHash} and not k.is_revoked`;
  if (!row) return undefined;
  const { key_id, key_prefix, scopes, last_used_at, ...account } = row;
  return { keyId: key_id, keyPrefix: key_prefix, scopes, lastUsedAt: last_used_at, account };
}

/**
 * Records a use at most about once a minute per key: the condition makes a second replica's
 * write in the same minute a no-op.
 */
export async function touchKeyLastUsed(sql: Sql, keyId: string): Promise<void> {
  await sql`
    update api_keys set last_used_at = now()
    where id = ${keyId} and (last_used_at is null or last_used_at < now() - interval '1 minute')`;
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
      returning id, label, key_prefix, scopes, is_revoked, last_used_at, created_at`;
    return record as ApiKeyRecord;
  });
}

export async function listKeys(sql: Sql, accountId: string): Promise<ApiKeyRecord[]> {
  return sql<ApiKeyRecord[]>`
    select id, label, key_prefix, scopes, is_revoked, last_used_at, created_at
    from api_keys where account_id = ${accountId}
    order by created_at desc, id desc
    limit ${KEY_LIST_LIMIT}`;
}

/** Revokes one of the account's keys; revoking twice is harmless. undefined: not the account's key. */
export async function revokeKey(sql: Sql, accountId: string, keyId: string): Promise<ApiKeyRecord | undefined> {
  const [record] = await sql<ApiKeyRecord[]>`
    update api_keys set is_revoked = true, revoked_at = coalesce(revoked_at, now())
    where id = ${keyId} and account_id = ${accountId}
    returning id, label, key_prefix, scopes, is_revoked, last_used_at, created_at`;
  return record;
}
