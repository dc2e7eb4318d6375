-- Keys a security team accepts (docs/access.md#key-lifecycle): a key may end at a time
-- (`expires_at`: given at creation, or set by a roll to the end of its grace period), may be
-- rolled once (`rolled_at`: a second roll of the same key is refused, also when it races the
-- first), and may work only from some client addresses (`allowed_ips`: canonical IPv4 or IPv6
-- addresses and CIDR blocks, null for any address).
--
-- note: catalogue only: nullable columns without a default and NOT VALID checks, so no row is
-- rewritten or read. Authentication still finds a key by api_keys_key_hash_key, one index
-- lookup: the new columns are read from the row that lookup finds, and the API checks them on
-- the key it caches, so a request whose key is cached still costs no query.
alter table api_keys add column expires_at timestamptz;
alter table api_keys add column rolled_at timestamptz;
alter table api_keys add column allowed_ips text[];

-- 1 to 20 entries (an empty list would lock the key out everywhere: null allows any address);
-- a rolled key always has an end.
alter table api_keys
  add constraint api_keys_allowed_ips check (allowed_ips is null or cardinality(allowed_ips) between 1 and 20) not valid;
alter table api_keys
  add constraint api_keys_rolled_has_end check (rolled_at is null or expires_at is not null) not valid;

-- The API replicas cache keys with their end and their addresses: a change of either made
-- directly in the table must clear their caches as a revocation does (0003).
drop trigger api_keys_auth_change on api_keys;
create trigger api_keys_auth_change
  after update of is_revoked, scopes, key_hash, expires_at, allowed_ips or delete on api_keys
  for each statement execute function notify_auth_change();
