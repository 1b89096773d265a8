-- Nothing to do on PostgreSQL: ../../sqlite/2026-12-02-000009_clustered_keys/up.sql makes the
-- read-mostly tables with a TEXT primary key clustered (`WITHOUT ROWID`) on SQLite, where a
-- rowid table searches two B-trees for every read by id. A PostgreSQL table is a heap with its
-- primary key as a separate index whatever is declared, and `CLUSTER` only orders the heap once;
-- the schemas of the two backends stay the same (tables, columns, constraints, index names).
-- The statement keeps the file from being empty.
SELECT 1;
