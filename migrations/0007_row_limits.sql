-- The row rules (docs/rows.md), checked again by the tables: the queue is a trust boundary, and
-- anything that can add a job with its rows could otherwise store what the API refuses (a
-- `javascript:` photo URL, a 10,000-character tag, an external_id that clears a terminal). The
-- stored values are checked: at most the 8 photo URLs and 10 tags that are kept.
--
-- Each check accepts everything the row rules accept (src/shared/rows/); a URL's authority is
-- checked for its shape only, not parsed as the API parses it.
--
-- note: the checks are NOT VALID: added in the catalogue alone, no row read and no rewrite.
-- New and updated rows are checked; a row stored before that breaks one is left as it is, and an
-- update of it then fails until it is corrected (`alter table ... validate constraint` lists none
-- when there is none left).

-- Every entry present and at most `max_length` characters. note: a CHECK cannot hold a subquery;
-- a function can, and one that reads only its arguments is immutable.
create function text_entries_fit(entries text[], max_length integer) returns boolean
  language sql immutable strict parallel safe
  as $$ select coalesce(bool_and(entry is not null and char_length(entry) <= max_length), true) from unnest(entries) as entry $$;

-- Every entry an absolute https:// URL with a host, as the row rule shapes it (field-schemas.ts):
-- "https://" in any case, an authority, then a path, query or fragment; no whitespace (as
-- JavaScript's \s has it: spelt out, where PostgreSQL's \s would follow the locale), control
-- character or backslash anywhere; at most 2,048 characters.
create function https_urls_fit(urls text[]) returns boolean
  language sql immutable strict parallel safe
  as $$
    select coalesce(bool_and(
      url is not null
      and char_length(url) <= 2048
      and url ~* '^https://[^\\/?#\u0001-\u0020\u007f\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+([/?#][^\\\u0001-\u0020\u007f\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]*)?$'
    ), true)
    from unnest(urls) as url
  $$;

-- A partner's id as stored (external-id.ts, control-characters.ts): 1 to 100 characters, trimmed
-- (no whitespace at either end, as JavaScript trims it), no control or bidirectional character.
create function external_id_fits(id text) returns boolean
  language sql immutable strict parallel safe
  as $$
    select char_length(id) between 1 and 100
      and id !~ '^[\u0020\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0020\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
      and id !~ '[\u0001-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]'
  $$;

alter table listings
  add constraint listings_photo_urls_https check (https_urls_fit(photo_urls)) not valid,
  add constraint listings_thumbnail_url_https check (https_urls_fit(array[thumbnail_url])) not valid,
  add constraint listings_tags_length check (text_entries_fit(tags, 80)) not valid,
  add constraint listings_external_id_characters check (external_id_fits(external_id)) not valid;

alter table machines
  add constraint machines_identifiers_length check (
    char_length(template_id) <= 200 and char_length(manufacturer) <= 200 and char_length(model) <= 200
    and char_length(model_number) <= 200
  ) not valid,
  add constraint machines_capabilities_size check (cardinality(capabilities) <= 100 and text_entries_fit(capabilities, 80)) not valid,
  add constraint machines_external_id_characters check (external_id_fits(external_id)) not valid;
