-- Reverts up.sql.
ALTER TABLE objects DROP COLUMN deleted_from;
