-- The member's modification time on its memberships (SQLite). Mirrors
-- ../../postgres/2026-11-23-000004_membership_member_modified_at/up.sql; keep both files in
-- step (see migrations/README.md).

-- A catalog listing is ordered by the members' `objects.modified_at` (newest first, ties by
-- id) while it is filtered by `memberships.collection_id`: no index served both, so every page
-- sorted all of the library's members. `member_modified_at` is a copy of the member's
-- `objects.modified_at`, kept equal by every transaction that changes the object or adds the
-- membership, and indexed with the collection, so that a page is a range walk of
-- `idx_memberships_collection_id_member_modified_at` starting at the cursor.
--
-- SQLite cannot add a NOT NULL column without a default, and a default would let a writer that
-- forgets the column store a wrong order unnoticed: the table is rebuilt instead, backfilled
-- from `objects`. `memberships` is no table's parent, so dropping the old one cascades nothing
-- and the rebuild needs no `PRAGMA foreign_keys = OFF`. The subquery (not a join) makes a
-- membership without its object fail the NOT NULL constraint rather than vanish.
CREATE TABLE memberships_new (
    collection_id      TEXT   NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
    member_id          TEXT   NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
    added_at           BIGINT NOT NULL,
    member_modified_at BIGINT NOT NULL,
    PRIMARY KEY (collection_id, member_id)
);
INSERT INTO memberships_new (collection_id, member_id, added_at, member_modified_at)
    SELECT m.collection_id, m.member_id, m.added_at,
           (SELECT o.modified_at FROM objects o WHERE o.id = m.member_id)
    FROM memberships m;
DROP TABLE memberships;
ALTER TABLE memberships_new RENAME TO memberships;
CREATE INDEX idx_memberships_member_id ON memberships (member_id);
CREATE INDEX idx_memberships_collection_id_added_at ON memberships (collection_id, added_at);
CREATE INDEX idx_memberships_collection_id_member_modified_at
    ON memberships (collection_id, member_modified_at DESC, member_id);
