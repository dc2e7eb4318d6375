-- Whole files imported in the background (docs/imports.md): the valid rows of a file wait here,
-- in PostgreSQL, between the upload and the chunks that write them. A chunk moves its rows into
-- `listings` or `machines` and deletes them from here in one transaction, so that each row is
-- written exactly once, whatever happens to the worker; what is left when the import ends is
-- deleted with it.
--
-- note: new tables only; nothing existing is read or rewritten.

create table import_file_rows (
  job_id text not null references imports(job_id) on delete cascade,
  -- the row's position in the file, from 0
  index integer not null check (index >= 0),
  -- the row's own id, trimmed: a later row of the file with the same id fails
  external_id text,
  -- the normalised row, with the columns the insert reads
  row jsonb not null,
  primary key (job_id, index)
);
create unique index import_file_rows_external_id_key on import_file_rows (job_id, external_id) where external_id is not null;

-- The failed rows of a file import, by position: as many as the file has, so a table rather than
-- the jsonb list of a bulk request's record.
create table import_file_errors (
  job_id text not null references imports(job_id) on delete cascade,
  index integer not null check (index >= 0),
  error jsonb not null,
  primary key (job_id, index)
);

-- The file imports the workers write, oldest first.
create index imports_file_unfinished_idx on imports (created_at)
  where source = 'file' and state in ('queued', 'running');
