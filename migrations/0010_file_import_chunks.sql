-- Whole files staged a chunk per row rather than a row per row (docs/operators.md#file-imports):
-- the upload stages each batch of valid rows it has checked as one JSON array, and a worker's chunk
-- writes one such batch and deletes it in the same transaction. A row per file row cost an index
-- entry and a tuple to insert, and another to delete, for each of a million rows: as much work again
-- as writing the listings themselves.
--
-- The repeated-`external_id` check of a file keeps a row per id, in a table of its own: files
-- without ids pay nothing for it.

create table import_file_chunks (
  job_id text not null references imports(job_id) on delete cascade,
  -- the file position (from 0) of the chunk's first row: chunks are written in this order
  first_index integer not null check (first_index >= 0),
  -- how many rows `body` holds
  rows integer not null check (rows > 0),
  -- the chunk's normalised rows, as the JSON array the insert reads
  body text not null,
  -- whether any row of the chunk carries an external_id (then the chunk updates by id)
  with_external_ids boolean not null,
  primary key (job_id, first_index)
);
-- note: lz4 compresses the chunks' JSON several times faster than the default pglz, and a chunk is
-- read once; a server built without lz4 keeps its default.
do $$
begin
  if exists (select 1 from pg_settings where name = 'default_toast_compression' and 'lz4' = any(enumvals)) then
    alter table import_file_chunks alter column body set compression lz4;
  end if;
end
$$;

create table import_file_external_ids (
  job_id text not null references imports(job_id) on delete cascade,
  external_id text not null,
  -- the file position of the row that carries it: the first in the file, later ones failed
  index integer not null check (index >= 0),
  primary key (job_id, external_id)
);

-- What an earlier version staged moves over, a thousand rows a chunk, in file order.
insert into import_file_chunks (job_id, first_index, rows, body, with_external_ids)
select job_id, min(index), count(*), json_agg(row order by index)::text, bool_or(external_id is not null)
from import_file_rows
group by job_id, index / 1000;

insert into import_file_external_ids (job_id, external_id, index)
select job_id, external_id, index from import_file_rows where external_id is not null;

drop table import_file_rows;
