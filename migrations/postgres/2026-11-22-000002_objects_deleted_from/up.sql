-- Where a soft-deleted object was removed from (PostgreSQL). Mirrors
-- ../../sqlite/2026-11-22-000002_objects_deleted_from/up.sql; keep both files in step
-- (see migrations/README.md).

-- The collection whose membership removal soft-deleted the object (its last one), so that
-- `medialib restore UUID` can put it back there. NULL while the object is live, and for objects
-- soft-deleted before this migration. No foreign key: the collection may itself be deleted or
-- purged later, and restore checks that it is still live.
ALTER TABLE objects ADD COLUMN deleted_from TEXT NULL;
