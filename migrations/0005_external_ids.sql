-- Partners match rows on their own id (docs/rows.md#external-id): a listing or machine may carry
-- the partner's `external_id`, unique per account and table, and an import updates the row that
-- has it instead of adding a second one.
--
-- note: written for tables that already hold millions of rows. Nullable columns without a
-- default are added in the catalogue alone (no rewrite); the checks are NOT VALID, so adding
-- them reads no row (every existing row is null, and new and updated rows are checked); the
-- unique indexes are partial, so they hold only the rows that carry an id. Building them still
-- reads each table once while writes to it wait (about a second per million rows here): plain
-- CREATE INDEX, since CONCURRENTLY cannot run inside the migration's transaction.

alter table machines
  add column external_id text,
  add column updated_at timestamptz;
alter table machines
  add constraint machines_external_id_length check (char_length(external_id) between 1 and 100) not valid;
create unique index machines_account_external_id_key on machines (account_id, external_id) where external_id is not null;

alter table listings
  add column external_id text,
  add column updated_at timestamptz;
alter table listings
  add constraint listings_external_id_length check (char_length(external_id) between 1 and 100) not valid;
create unique index listings_account_external_id_key on listings (account_id, external_id) where external_id is not null;

-- How an import that matched external ids ended; null for an import without them, whose
-- result is only {inserted, skipped, errors}.
alter table imports
  add column updated integer,
  add column unchanged integer;
alter table imports
  add constraint imports_matched_counts check (updated >= 0 and unchanged >= 0) not valid;
