-- A mirror (docs/catalogue.md#mirror) removes the account's rows whose external_id appears on no
-- line of its file. The ids of the valid rows are claimed while the file is staged
-- (import_file_external_ids, 0010); a line that failed its checks still names its row, which must
-- keep its place (a typo in one field does not retire the listing): its id is kept here, for the
-- removal to read, and dropped with the rest of the staging when the import ends.
--
-- note: a new table only; nothing existing is read or rewritten.
create table import_file_seen_ids (
  job_id text not null references imports(job_id) on delete cascade,
  external_id text not null,
  primary key (job_id, external_id)
);
