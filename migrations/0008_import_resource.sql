-- Every import is something a partner can look up (docs/imports.md): its id, kind, source, state,
-- times and counts, and its failed rows, kept IMPORT_RETENTION_DAYS after it ended, then purged.
--
-- note: written for tables that already hold millions of rows. Nullable columns without a default
-- and a column with a constant default are added in the catalogue alone (no rewrite); the check
-- is NOT VALID (no row read). Dropping a foreign key reads nothing. The new indexes are partial
-- and hold only what the purge and the sweep look for; building them reads `imports` once.

alter table imports
  -- `request` (a bulk request) or `file` (a whole file in one request)
  add column source text not null default 'request',
  -- rows the partner sent, valid or not; null for an import recorded before this migration,
  -- whose `inserted + updated + unchanged + skipped` is that number
  add column received integer,
  -- rows done so far (written, matched or refused); null for a request import, which is done all
  -- at once: `inserted + updated + unchanged + skipped`
  add column processed integer,
  add column started_at timestamptz,
  add column finished_at timestamptz;

alter table imports
  add constraint imports_source check (source in ('request', 'file')) not valid,
  add constraint imports_received check (received >= 0 and processed >= 0) not valid;

-- `queued`, `running` and `cancelled` belong to file imports, which are recorded when they are accepted.
alter table imports drop constraint imports_state;
alter table imports
  add constraint imports_state check (state in ('queued', 'running', 'completed', 'failed', 'cancelled')) not valid;

-- note: a row keeps the id of the import that last wrote it after that import is purged. Without
-- the keys, purging an import is a delete of its one record, instead of an update of every row
-- it wrote (with no index to find them: a scan of the whole table per purged import).
alter table listings drop constraint listings_import_job_id_fkey;
alter table machines drop constraint machines_import_job_id_fkey;

-- The purge: ended imports, oldest first (an import recorded before this migration has no
-- finished_at; it ended when it was recorded).
create index imports_ended_idx on imports ((coalesce(finished_at, created_at)))
  where state in ('completed', 'failed', 'cancelled');

-- A bulk request's import answered 504: its outcome is not known yet, and its record in `imports`
-- is written by its worker's transaction, which may be holding that record uncommitted right now.
-- note: a table of its own, so that recording it never waits for that transaction (an insert into
-- `imports` would wait on the primary key); the partner reads it `running` until the record
-- shows. Settled ones are deleted by the sweep, and one whose job can no longer write is recorded
-- failed.
create table unsettled_imports (
  job_id text primary key,
  account_id uuid not null references accounts(id) on delete cascade,
  kind text not null check (kind in ('machines', 'listings')),
  request_id text not null,
  received integer not null check (received >= 0),
  skipped integer not null check (skipped >= 0),
  errors jsonb not null default '[]',
  created_at timestamptz not null
);
create index unsettled_imports_account_created_idx on unsettled_imports (account_id, created_at desc);
create index unsettled_imports_created_idx on unsettled_imports (created_at);
