import type { Sql } from '../infra/db.js';

export interface Account {
  id: string;
  display_name: string;
  subscription_tier: string;
  is_owner: boolean;
  has_completed_onboarding: boolean;
  avatar_url: string | null;
}

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
    returning id, display_name, subscription_tier, is_owner, has_completed_onboarding, avatar_url`;
  return account as Account;
}

export async function findAccount(sql: Sql, id: string): Promise<Account | undefined> {
  const [account] = await sql<Account[]>`
    select id, display_name, subscription_tier, is_owner, has_completed_onboarding, avatar_url
    from accounts where id = ${id}`;
  return account;
}

export async function setAccountTier(sql: Sql, id: string, tier: string): Promise<Account | undefined> {
  const [account] = await sql<Account[]>`
    update accounts set subscription_tier = ${tier}, updated_at = now() where id = ${id}
    returning id, display_name, subscription_tier, is_owner, has_completed_onboarding, avatar_url`;
  return account;
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Guards uuid columns: Postgres would raise 22P02 for anything else. */
export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}
