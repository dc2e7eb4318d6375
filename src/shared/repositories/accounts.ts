import type { Sql } from '../infra/db.js';

/** An account as the service reads it. note: records are camelCase; the API's JSON is snake_case, mapped where it is answered. */
export interface Account {
  id: string;
  displayName: string;
  subscriptionTier: string;
  isOwner: boolean;
  hasCompletedOnboarding: boolean;
  avatarUrl: string | null;
}

// note: a constant of this file, never input, so sql.unsafe is safe with it.
const ACCOUNT_COLUMNS = 'id, display_name as "displayName", subscription_tier as "subscriptionTier", is_owner as "isOwner", has_completed_onboarding as "hasCompletedOnboarding", avatar_url as "avatarUrl"';

export interface NewAccount {
  displayName: string;
  tier: string;
  isOwner: boolean;
  hasCompletedOnboarding: boolean;
  avatarUrl: string | null;
}

export async function createAccount(sql: Sql, input: NewAccount): Promise<Account> {
  const [account] = await sql<Account[]>`
    insert into accounts (display_name, subscription_tier, is_owner, has_completed_onboarding, avatar_url)
    values (${input.displayName}, ${input.tier}, ${input.isOwner}, ${input.hasCompletedOnboarding}, ${input.avatarUrl})
    returning ${sql.unsafe(ACCOUNT_COLUMNS)}`;
  return account as Account;
}

export async function findAccount(sql: Sql, id: string): Promise<Account | undefined> {
  const [account] = await sql<Account[]>`
    select ${sql.unsafe(ACCOUNT_COLUMNS)} from accounts where id = ${id}`;
  return account;
}

export async function setAccountTier(sql: Sql, id: string, tier: string): Promise<Account | undefined> {
  const [account] = await sql<Account[]>`
    update accounts set subscription_tier = ${tier}, updated_at = now() where id = ${id}
    returning ${sql.unsafe(ACCOUNT_COLUMNS)}`;
  return account;
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Guards uuid columns: Postgres would raise 22P02 for anything else. */
export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}
