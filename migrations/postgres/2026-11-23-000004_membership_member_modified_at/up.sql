-- The member's modification time on its memberships (PostgreSQL). Mirrors
-- ../../sqlite/2026-11-23-000004_membership_member_modified_at/up.sql; keep both files in step
-- (see migrations/README.md).

-- A catalog listing is ordered by the members' `objects.modified_at` (newest first, ties by
-- id) while it is filtered by `memberships.collection_id`: no index served both, so every page
-- sorted all of the library's members. `member_modified_at` is a copy of the member's
-- `objects.modified_at`, kept equal by every transaction that changes the object or adds the
-- membership, and indexed with the collection, so that a page is a range walk of
-- `idx_memberships_collection_id_member_modified_at` starting at the cursor.
--
-- Added nullable, backfilled from `objects`, then made NOT NULL: no default is left behind
-- (one would let a writer that forgets the column store a wrong order unnoticed), and a
-- membership without its object would fail the last step rather than pass unnoticed.
ALTER TABLE memberships ADD COLUMN member_modified_at BIGINT NULL;
UPDATE memberships m SET member_modified_at = o.modified_at FROM objects o WHERE o.id = m.member_id;
ALTER TABLE memberships ALTER COLUMN member_modified_at SET NOT NULL;
CREATE INDEX idx_memberships_collection_id_member_modified_at
    ON memberships (collection_id, member_modified_at DESC, member_id);
