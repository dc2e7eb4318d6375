-- A whole file is staged as it arrives, a batch at a time, each batch in a short transaction of its
-- own, instead of in one transaction that held a database connection for as long as the partner
-- took to send the file (up to FILE_UPLOAD_TIMEOUT_MS). While its bytes arrive the import reads
-- `uploading`: nobody sees it (every look-up leaves it out), no worker writes it, and it becomes
-- `queued` in the one transaction that accepts the whole file. An upload that is refused, or whose
-- client goes away, is deleted by its API process; one whose process died is deleted by the
-- workers' sweep once its process has not been heard of for a while (docs/operators.md#file-imports).
--
-- note: catalogue only. The state check is replaced NOT VALID, as 0008 did (no row read); the
-- new column has no default; the index holds only the uploads in progress, few and short-lived.

alter table imports drop constraint imports_state;
alter table imports
  add constraint imports_state check (state in ('uploading', 'queued', 'running', 'completed', 'failed', 'cancelled')) not valid;

-- The uploads of an account in progress (the file-import cap counts them) and the abandoned ones
-- (the sweep), oldest first.
create index imports_uploading_idx on imports (account_id, created_at) where state = 'uploading';

-- When the API process receiving an upload last said it is still receiving it (every few
-- seconds): an upload not heard of for a while was abandoned (its process died), and the sweep
-- deletes it then, rather than once its whole upload time is over. null for every other import.
alter table imports add column upload_seen_at timestamptz;
