-- Each row's id and outcome, kept with an import that asked for them (`?return=rows`,
-- docs/catalogue.md#rows-and-their-ids): an Idempotency-Key replay, and a job's rerun after its
-- worker died, answer the same `rows` from here.
--
-- note: one row per import, its entries as parallel arrays in request order, rather than one row
-- per entry: 200 to 1,000 entries an import would be as many index entries and row headers
-- (some 60 bytes each before the data); a uuid[] holds an id in 16 bytes where JSON takes 38,
-- and the arrays past 2 kB are compressed out of line (TOAST). Only imports that asked have a
-- row here; the purge of ended imports removes it with its import (on delete cascade).
create table import_row_outcomes (
  job_id text primary key references imports (job_id) on delete cascade,
  -- the entry's position in the request
  indexes integer[] not null,
  -- the row's id (for a delete, the id the row had)
  ids uuid[] not null,
  -- the row's external_id, null when it has none
  external_ids text[] not null,
  outcomes text[] not null,
  constraint import_row_outcomes_lengths check (
    cardinality(ids) = cardinality(indexes) and cardinality(external_ids) = cardinality(indexes) and cardinality(outcomes) = cardinality(indexes)),
  constraint import_row_outcomes_ids check (array_position(ids, null) is null),
  constraint import_row_outcomes_known check (outcomes <@ array['inserted', 'updated', 'unchanged', 'archived', 'deleted'])
);
