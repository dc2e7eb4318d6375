-- Imports that archive or delete the rows a request names (docs/catalogue.md#archive-and-delete)
-- are bulk requests too: one answered 504 is recorded unsettled (0008) until its record shows, and
-- reads `running` meanwhile. It must read its own action then, not `upsert`, and keep it when it is
-- recorded `failed` from there.
--
-- note: catalogue only: a column with a constant default and a NOT VALID check (no row rewritten
-- or read); the table holds a few rows at most.
alter table unsettled_imports add column action text not null default 'upsert';
alter table unsettled_imports
  add constraint unsettled_imports_action check (action in ('upsert', 'archive', 'delete')) not valid;
