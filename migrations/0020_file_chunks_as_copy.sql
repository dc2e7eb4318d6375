-- A file's chunks staged as the text `COPY` reads (src/shared/import/copy-rows.ts): a worker's chunk
-- streams its body into its connection's table of copied rows and inserts from there, which costs
-- PostgreSQL a quarter less than reading the same rows from JSON (bench/README.md, issue 43). A
-- merge's chunks stay JSON (each row lists the fields it changes), and so do the chunks an API
-- before 0.11.0 staged: `format` tells them apart.
alter table import_file_chunks add column format text not null default 'json' check (format in ('json', 'copy'));
