-- The row checks of 0007, the same rules for a third to a half less. A SQL function whose body
-- reads a set (`from unnest(...)`), or a strict one whose body is an AND, is never inlined:
-- PostgreSQL runs it as a query of its own for every row it checks, executor set-up included. The
-- checks took 1.7-2.4 ms of PostgreSQL's 5.8-6.5 ms for each import of 200 listings, and take
-- 1.0-1.3 ms now (issue 24, bench/README.md). The array checks are PL/pgSQL loops, whose plans
-- the session keeps, and the checks of one value are SQL expressions PostgreSQL inlines into the
-- constraint.
--
-- note: the rules are those of 0007, value for value (test/migrations/cheaper-row-checks.test.ts
-- holds each function to 0007's, row-limits.test.ts the tables to the row rules): a null entry
-- fails; an empty array passes; a null value passes (the columns that must have one are NOT
-- NULL). Replacing a function keeps the constraints built on it. Only the thumbnail's constraint
-- is rebuilt, on the one-value check, and NOT VALID again: catalogue only, no row read, under the
-- same moment's exclusive lock on listings as 0007's.

-- An absolute https:// URL with a host, as the row rule shapes it (field-schemas.ts): "https://"
-- in any case, an authority, then a path, query or fragment; no whitespace (as JavaScript's \s has
-- it: spelt out, where PostgreSQL's \s would follow the locale), control character or backslash
-- anywhere; at most 2,048 characters. note: not strict, so that it is inlined; null gives null.
create function https_url_fits(url text) returns boolean
  language sql immutable parallel safe
  as $$
    select char_length(url) <= 2048
      and url ~* '^https://[^\\/?#\u0001-\u0020\u007f\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+([/?#][^\\\u0001-\u0020\u007f\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]*)?$'
  $$;

-- Every entry present and an https URL, as https_url_fits has it. note: its test spelt out rather
-- than called: a function a check calls must not depend on the search_path, which pg_restore
-- empties while it loads the rows; PostgreSQL's own functions are found whatever it is.
create or replace function https_urls_fit(urls text[]) returns boolean
  language plpgsql immutable strict parallel safe
  as $$
declare
  url text;
begin
  foreach url in array urls loop
    if url is null
       or char_length(url) > 2048
       or url !~* '^https://[^\\/?#\u0001-\u0020\u007f\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+([/?#][^\\\u0001-\u0020\u007f\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]*)?$' then
      return false;
    end if;
  end loop;
  return true;
end
$$;

-- Every entry present and at most `max_length` characters.
create or replace function text_entries_fit(entries text[], max_length integer) returns boolean
  language plpgsql immutable strict parallel safe
  as $$
declare
  entry text;
begin
  foreach entry in array entries loop
    if entry is null or char_length(entry) > max_length then
      return false;
    end if;
  end loop;
  return true;
end
$$;

-- As 0007 has it, no longer strict: PostgreSQL inlines a strict function only when it can show
-- that the body gives null for a null argument, which it cannot for an AND. This body does: with
-- a null id each of its terms is null, and so is their AND.
create or replace function external_id_fits(id text) returns boolean
  language sql immutable parallel safe
  as $$
    select char_length(id) between 1 and 100
      and id !~ '^[\u0020\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0020\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
      and id !~ '[\u0001-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]'
  $$;

alter table listings
  drop constraint listings_thumbnail_url_https,
  add constraint listings_thumbnail_url_https check (https_url_fits(thumbnail_url)) not valid;
