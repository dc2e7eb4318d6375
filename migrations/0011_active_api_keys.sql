-- An account's active keys, newest first: what `GET /v1/api/keys?status=active` pages through and
-- what the 20-active-key cap counts on every create. note: partial, so the revoked keys, which
-- only accumulate, are never read to find the at most 20 active ones. api_keys holds a row per
-- key, so building the index inside the migration's transaction takes a moment.
create index api_keys_account_active_idx on api_keys (account_id, created_at desc, id desc)
  where not is_revoked;
