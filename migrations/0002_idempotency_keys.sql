-- Idempotency-Key of bulk imports: scoped to the account, kept 24 hours. A repeat with the same
-- key finds the job of the first request and waits for or replays its result.
create table idempotency_keys (
  account_id uuid not null references accounts(id) on delete cascade,
  idempotency_key text not null check (idempotency_key ~ '^[ -~]{1,255}$'),
  -- sha256 of the endpoint and the request body: the same key with another body is refused
  request_hash bytea not null check (length(request_hash) = 32),
  job_id text not null,
  created_at timestamptz not null default now(),
  primary key (account_id, idempotency_key)
);
create index idempotency_keys_created_idx on idempotency_keys (created_at);
