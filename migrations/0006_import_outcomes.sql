-- An import's record is the proof of what it wrote, not the queue. Before the API answers that an
-- import wrote nothing (a job withdrawn, failed, lost or never queued), it records the import as
-- `failed`: a worker that later runs the same job finds the record and writes nothing, so the
-- answer stays true whatever the queue does afterwards. A job that had already committed is
-- found `completed` instead, and its result is answered.
--
-- note: a column with a constant default and a NOT VALID check are added in the catalogue
-- alone: no rewrite of the table, and no row read.
alter table imports
  add column state text not null default 'completed';
alter table imports
  add constraint imports_state check (state in ('completed', 'failed')) not valid;
