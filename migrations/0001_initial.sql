-- Accounts: the marketplace accounts that own keys, machines and listings.
create table accounts (
  id uuid primary key default gen_random_uuid(),
  display_name text not null check (length(btrim(display_name)) between 1 and 200),
  subscription_tier text not null check (subscription_tier ~ '^[a-z][a-z0-9_]{0,31}$'),
  is_owner boolean not null default false,
  has_completed_onboarding boolean not null default false,
  avatar_url text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- API keys: only the prefix and a SHA-256 of the full key are stored, never the key itself.
create table api_keys (
  id uuid primary key default gen_random_uuid(),
  account_id uuid not null references accounts(id) on delete cascade,
  label text not null check (length(label) between 1 and 80),
  key_prefix text not null check (key_prefix ~ '^[0-9a-f]{8}$'),
  key_hash bytea not null unique check (length(key_hash) = 32),
  scopes text[] not null check (
    cardinality(scopes) >= 1
    and scopes <@ array['listings:write', 'listings:read', 'jobs:read', 'earnings:read', 'webhooks']::text[]
  ),
  is_revoked boolean not null default false,
  revoked_at timestamptz,
  last_used_at timestamptz,
  created_at timestamptz not null default now(),
  check (is_revoked = (revoked_at is not null))
);
-- Listing an account's keys newest first, and counting its active ones.
create index api_keys_account_created_idx on api_keys (account_id, created_at desc, id desc);

-- One row per bulk import, written in the same transaction as its rows: a job that runs again
-- finds its record and inserts nothing.
create table imports (
  job_id text primary key,
  account_id uuid not null references accounts(id) on delete cascade,
  kind text not null check (kind in ('machines', 'listings')),
  request_id text,
  inserted integer not null check (inserted >= 0),
  skipped integer not null check (skipped >= 0),
  errors jsonb not null default '[]',
  created_at timestamptz not null default now()
);
create index imports_account_created_idx on imports (account_id, created_at desc);

create table machines (
  id uuid primary key default gen_random_uuid(),
  account_id uuid not null references accounts(id) on delete cascade,
  import_job_id text references imports(job_id) on delete set null,
  template_id text not null check (length(template_id) > 0),
  category text not null check (length(category) between 1 and 80),
  manufacturer text not null check (length(manufacturer) > 0),
  model text not null check (length(model) > 0),
  model_number text,
  nickname text check (char_length(nickname) <= 80),
  capabilities text[] not null default '{}',
  is_skill_station boolean not null default false,
  verification_status text not null default 'pending'
    check (verification_status in ('pending', 'verified', 'rejected')),
  created_at timestamptz not null default now()
);
create index machines_account_idx on machines (account_id);

create table listings (
  id uuid primary key default gen_random_uuid(),
  account_id uuid not null references accounts(id) on delete cascade,
  import_job_id text references imports(job_id) on delete set null,
  title text not null check (char_length(title) between 1 and 120),
  description text not null check (char_length(description) between 1 and 2000),
  price_cents integer not null check (price_cents >= 0),
  currency text not null check (currency = 'USD'),
  category text not null check (category in (
    'miniatures', 'home_decor', 'cosplay', 'jewelry', 'gadgets', 'art', 'gifts', 'replacement',
    'fashion', 'electronics', 'automotive', 'rc_drones', 'education', 'outdoor', 'other'
  )),
  material text not null check (char_length(material) between 1 and 80),
  photo_urls text[] not null check (cardinality(photo_urls) between 1 and 8),
  thumbnail_url text not null,
  color text check (char_length(color) <= 40),
  tags text[] not null default '{}' check (cardinality(tags) <= 10),
  print_time_hours double precision check (print_time_hours >= 0),
  is_available boolean not null default true,
  allows_custom_orders boolean not null default false,
  maker_name text not null,
  maker_photo_url text,
  created_at timestamptz not null default now()
);
create index listings_account_idx on listings (account_id);
