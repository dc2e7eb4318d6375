-- A partner's whole catalogue (docs/catalogue.md): rows read back page by page, archived and
-- restored, deleted; imports that archive or delete, file imports that mirror the catalogue, and
-- imports that merge what a row carries into the row it names.
--
-- note: written for tables that already hold millions of rows. The new columns are nullable
-- without a default, or have a constant default: the catalogue alone changes, no row is
-- rewritten; the checks are NOT VALID (no row read). Each index reads its table once while writes
-- to it wait (about a second per million rows here): plain CREATE INDEX, since CONCURRENTLY cannot
-- run inside the migration's transaction.

-- When the row was archived; null while it is active. An archived row keeps every field and its
-- external_id (so the unique index still holds it, and an upsert of that id restores it).
alter table listings add column archived_at timestamptz;
alter table machines add column archived_at timestamptz;

-- A catalogue page, in creation order (the ids are time-ordered, 0004): the account's rows from
-- the cursor's id on. It replaces the index on the account alone, which an account's deletion
-- also reads. The archived rows, usually few, have an index of their own, so that a page of them
-- never walks past the active ones.
create index listings_account_id_idx on listings (account_id, id);
drop index listings_account_idx;
create index listings_archived_idx on listings (account_id, id) where archived_at is not null;
create index machines_account_id_idx on machines (account_id, id);
drop index machines_account_idx;
create index machines_archived_idx on machines (account_id, id) where archived_at is not null;

-- `updated_since`: the rows created, changed, archived or restored at or after a time. A row that
-- never changed has no updated_at: its created_at is when it last changed.
create index listings_account_changed_idx on listings (account_id, (coalesce(updated_at, created_at)));
create index machines_account_changed_idx on machines (account_id, (coalesce(updated_at, created_at)));

-- What an import does: `upsert` (every import before this one), `archive` or `delete` rows it
-- names; `mode` `mirror` for a file that is the whole catalogue; `merge` for rows that change
-- only the fields they carry. `archived` and `deleted` count what it removed (null: 0).
alter table imports
  add column action text not null default 'upsert',
  add column mode text not null default 'upsert',
  add column merge boolean not null default false,
  add column archived integer,
  add column deleted integer;
alter table imports
  add constraint imports_action check (action in ('upsert', 'archive', 'delete')) not valid,
  add constraint imports_mode check (mode in ('upsert', 'mirror')) not valid,
  add constraint imports_removed check (archived >= 0 and deleted >= 0) not valid;

-- A mirror's removal of the rows its file left out: what it removes (`archive` or `delete`), its
-- guard (a percentage), where it is (`pending` until the file is written, then `done`, `held` or
-- `skipped`) and how many rows it removed (or would have). null for every other import.
alter table imports
  add column removal_missing text,
  add column removal_max_percent integer,
  add column removal_state text,
  add column removal_rows integer;
alter table imports
  add constraint imports_removal check (
    (mode = 'mirror') = (removal_state is not null)
    and (removal_state is null or (removal_missing in ('archive', 'delete')
      and removal_max_percent between 0 and 100
      and removal_state in ('pending', 'done', 'held', 'skipped')
      and removal_rows >= 0))) not valid;
