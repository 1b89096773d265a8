-- Reverts up.sql (the index goes with its column; dropped first to mirror the SQLite file).
DROP INDEX IF EXISTS idx_memberships_collection_id_member_modified_at;
ALTER TABLE memberships DROP COLUMN member_modified_at;
