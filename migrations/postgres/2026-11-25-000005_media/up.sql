-- Media: uploads in progress and each object's media (postgres). Mirrors
-- ../../sqlite/2026-11-25-000005_media/up.sql; keep both files in step (see migrations/README.md).

-- The key delivery URLs are signed with (DECISIONS §7), shared by every process. NULL until
-- the first start fills it with 32 random bytes (hex); `media_signing_key` overrides it.
ALTER TABLE organization ADD COLUMN media_signing_key TEXT NULL;

-- One unfinished upload per object. The bytes are in media storage; this row says how many
-- are durable (`offset_bytes`), the storage adapter's staging state that describes them, the
-- SHA-256 of those bytes so far (a resumable state, see domain::media::ResumableSha256) and
-- who holds the write lock until when (one PATCH at a time).
CREATE TABLE uploads (
    object_id     TEXT   NOT NULL PRIMARY KEY REFERENCES objects (id) ON DELETE CASCADE,
    owner_id      TEXT   NOT NULL REFERENCES users (id),
    length        BIGINT NOT NULL CHECK (length >= 0),
    offset_bytes  BIGINT NOT NULL CHECK (offset_bytes >= 0 AND offset_bytes <= length),
    storage_key   TEXT   NOT NULL,
    staging_state TEXT   NOT NULL,
    sha256_state  TEXT   NOT NULL,
    filename      TEXT   NULL,
    content_type  TEXT   NULL,
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL,
    lock_holder   TEXT   NULL,
    lock_until    BIGINT NULL
);
CREATE INDEX idx_uploads_expires_at ON uploads (expires_at);

-- An object's media: where processing stands and the stored source file.
CREATE TABLE media (
    object_id           TEXT    NOT NULL PRIMARY KEY REFERENCES objects (id) ON DELETE CASCADE,
    state               TEXT    NOT NULL
        CHECK (state IN ('uploading', 'queued', 'processing', 'ready', 'failed')),
    progress            INTEGER NOT NULL DEFAULT 0 CHECK (progress BETWEEN 0 AND 100),
    error               TEXT    NULL,
    attempts            INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    source_key          TEXT    NULL,
    source_filename     TEXT    NULL,
    source_size         BIGINT  NULL,
    source_sha256       TEXT    NULL,
    source_content_type TEXT    NULL,
    modified_at         BIGINT  NOT NULL
);
