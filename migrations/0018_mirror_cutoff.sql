-- A mirror's cut-off and guard (docs/catalogue.md#mirror, decisions K.6). The file is a picture
-- of the catalogue as it stood when its upload began: a row another import wrote after that
-- moment stays, and the guard compares the removal with the catalogue the file replaces.
--
-- `upload_began_at`: when a file import's request arrived, written once by the upload's first
-- step and never moved (the import's created_at moves to the moment it is accepted, so that the
-- list of imports shows it where it became visible; an upload may take ten minutes).
-- `removal_base`: a mirror's guard base, the account's active rows of its kind with an
-- external_id, counted as its upload began.
--
-- note: catalogue only: nullable columns without a default, so no row is rewritten. An import
-- recorded before this migration has neither: its removal reads created_at and counts the rows
-- as it did (src/shared/repositories/mirror-removal.ts).
alter table imports add column upload_began_at timestamptz;
alter table imports add column removal_base integer;
