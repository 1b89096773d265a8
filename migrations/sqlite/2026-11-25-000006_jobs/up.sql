-- Processing jobs and the derived files of each object's media (sqlite). Mirrors
-- ../../postgres/2026-11-25-000006_jobs/up.sql; keep both files in step (see migrations/README.md).

-- The files the last finished job derived from the source (domain::media::derived::DerivedSet
-- as text: the directory they are in, each file's role, path, size, picture size, bitrate).
-- NULL until a job finished, and again when processing failed.
ALTER TABLE media ADD COLUMN derived TEXT NULL;

-- One processing job per object that waits for a worker or is being worked on; the row goes
-- when the job ends (the media row says how). A worker takes a job with one conditional
-- UPDATE (`holder`, `lease_until`), extends its lease while it works, and writes the outcome
-- in the same transaction as the media row, guarded by `generation`: every claim and every
-- re-queue bumps it, so a worker whose lease was taken over, or whose job was queued again,
-- changes nothing. `work_dir` is the directory the latest attempt writes its files to (the
-- next claimer deletes what a dead attempt left there).
CREATE TABLE jobs (
    object_id   TEXT    NOT NULL PRIMARY KEY REFERENCES objects (id) ON DELETE CASCADE,
    generation  BIGINT  NOT NULL CHECK (generation >= 0),
    attempts    INTEGER NOT NULL CHECK (attempts >= 0),
    run_at      BIGINT  NOT NULL,
    holder      TEXT    NULL,
    lease_until BIGINT  NULL,
    work_dir    TEXT    NULL,
    last_error  TEXT    NULL,
    created_at  BIGINT  NOT NULL,
    CHECK ((holder IS NULL) = (lease_until IS NULL))
);
CREATE INDEX idx_jobs_run_at ON jobs (run_at);
