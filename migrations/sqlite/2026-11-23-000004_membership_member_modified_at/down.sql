-- Reverts up.sql: the column goes (SQLite ≥ 3.35 drops a column that no index uses, so the
-- index goes first); the table's other columns, rows and indexes stay as they were.
DROP INDEX IF EXISTS idx_memberships_collection_id_member_modified_at;
ALTER TABLE memberships DROP COLUMN member_modified_at;
