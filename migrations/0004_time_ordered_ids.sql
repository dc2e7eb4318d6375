-- Listings and machines get time-ordered ids (UUID version 7, RFC 9562): a 48-bit Unix time in
-- milliseconds, then random bits. Random (version 4) ids scatter each import's rows over the
-- whole primary-key index, so a large table costs one index page read and, after every
-- checkpoint, one full-page WAL image per row; time-ordered ids land on the index's last pages.
-- The ids stay opaque: nothing reads time from them, and the API does not expose them.
create function uuid_v7() returns uuid
language sql volatile parallel safe
as $$
  select encode(
    -- version 7: the v4 version nibble 0100 with its two low bits set
    set_bit(set_bit(
      overlay(uuid_send(gen_random_uuid())
              placing substring(int8send(floor(extract(epoch from clock_timestamp()) * 1000)::bigint) from 3)
              from 1 for 6),
      52, 1), 53, 1),
    'hex')::uuid
$$;

alter table listings alter column id set default uuid_v7();
alter table machines alter column id set default uuid_v7();
