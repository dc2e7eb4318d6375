-- The API caches authenticated keys. The service itself bumps an auth version in Redis when it
-- revokes a key or changes a tier; these triggers also tell every API process (LISTEN
-- bulk_import_auth) when such a change is made directly in the tables.
create function notify_auth_change() returns trigger language plpgsql as $$
begin
  perform pg_notify('bulk_import_auth', tg_table_name);
  return null;
end;
$$;

create trigger accounts_auth_change
  after update of subscription_tier or delete on accounts
  for each statement execute function notify_auth_change();

create trigger api_keys_auth_change
  after update of is_revoked, scopes, key_hash or delete on api_keys
  for each statement execute function notify_auth_change();
