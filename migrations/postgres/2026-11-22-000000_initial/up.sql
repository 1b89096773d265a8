-- medialib initial schema (PostgreSQL). Mirrors ../../sqlite/2026-11-22-000000_initial/up.sql;
-- keep both files in step (see migrations/README.md).
-- Type names are chosen so that diesel maps them to Text / BigInt / Bool / Integer.
-- The explicit NOT NULL on primary-key columns is redundant here but keeps the two files alike.

CREATE TABLE organization (
    id         INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    namespace  TEXT    NOT NULL,
    created_at BIGINT  NOT NULL
);

CREATE TABLE users (
    id          TEXT    NOT NULL PRIMARY KEY,
    unique_id   TEXT    NOT NULL UNIQUE,
    first_name  TEXT    NOT NULL,
    last_name   TEXT    NOT NULL,
    org_admin   BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  BIGINT  NOT NULL,
    modified_at BIGINT  NOT NULL
);

CREATE TABLE objects (
    id          TEXT    NOT NULL PRIMARY KEY,
    object_type TEXT    NOT NULL CHECK (object_type IN ('catalog', 'video', 'audio', 'image', 'file')),
    title       TEXT    NOT NULL,
    description TEXT    NOT NULL,
    public      BOOLEAN NOT NULL,
    duration    BIGINT  NULL,
    owner_id    TEXT    NOT NULL REFERENCES users (id),
    shortcode   TEXT    NOT NULL UNIQUE,
    created_at  BIGINT  NOT NULL,
    modified_at BIGINT  NOT NULL,
    deleted_at  BIGINT  NULL
);
CREATE INDEX idx_objects_modified_at ON objects (modified_at);
CREATE INDEX idx_objects_deleted_at ON objects (deleted_at);

CREATE TABLE object_properties (
    object_id TEXT NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
    key       TEXT NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY (object_id, key)
);

CREATE TABLE memberships (
    collection_id TEXT   NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
    member_id     TEXT   NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
    added_at      BIGINT NOT NULL,
    PRIMARY KEY (collection_id, member_id)
);
CREATE INDEX idx_memberships_member_id ON memberships (member_id);
CREATE INDEX idx_memberships_collection_id_added_at ON memberships (collection_id, added_at);

CREATE TABLE permissions (
    collection_id TEXT   NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
    user_id       TEXT   NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    level         TEXT   NOT NULL CHECK (level IN ('none', 'view', 'admin')),
    granted_at    BIGINT NOT NULL,
    PRIMARY KEY (collection_id, user_id)
);
CREATE INDEX idx_permissions_user_id ON permissions (user_id);

CREATE TABLE oauth_clients (
    id            TEXT   NOT NULL PRIMARY KEY,
    name          TEXT   NOT NULL,
    secret_digest TEXT   NULL, -- NULL = public client
    created_at    BIGINT NOT NULL
);

CREATE TABLE oauth_client_redirect_uris (
    client_id TEXT    NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    uri       TEXT    NOT NULL,
    position  INTEGER NOT NULL,
    PRIMARY KEY (client_id, uri)
);

CREATE TABLE oauth_grants (
    id         TEXT    NOT NULL PRIMARY KEY,
    client_id  TEXT    NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    user_id    TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    scope      TEXT    NOT NULL,
    offline    BOOLEAN NOT NULL,
    created_at BIGINT  NOT NULL,
    revoked_at BIGINT  NULL
);
CREATE INDEX idx_oauth_grants_user_id ON oauth_grants (user_id);
CREATE INDEX idx_oauth_grants_client_id ON oauth_grants (client_id);

CREATE TABLE oauth_codes (
    digest         TEXT    NOT NULL PRIMARY KEY,
    client_id      TEXT    NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    user_id        TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    redirect_uri   TEXT    NOT NULL,
    scope          TEXT    NOT NULL,
    offline        BOOLEAN NOT NULL,
    code_challenge TEXT    NULL,
    created_at     BIGINT  NOT NULL,
    expires_at     BIGINT  NOT NULL,
    redeemed_at    BIGINT  NULL,
    grant_id       TEXT    NULL REFERENCES oauth_grants (id) ON DELETE SET NULL
);
CREATE INDEX idx_oauth_codes_expires_at ON oauth_codes (expires_at);

CREATE TABLE oauth_access_tokens (
    digest     TEXT   NOT NULL PRIMARY KEY,
    grant_id   TEXT   NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
    user_id    TEXT   NOT NULL,
    client_id  TEXT   NOT NULL,
    scope      TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    revoked_at BIGINT NULL
);
CREATE INDEX idx_oauth_access_tokens_grant_id ON oauth_access_tokens (grant_id);
CREATE INDEX idx_oauth_access_tokens_user_id ON oauth_access_tokens (user_id);
CREATE INDEX idx_oauth_access_tokens_expires_at ON oauth_access_tokens (expires_at);

CREATE TABLE oauth_refresh_tokens (
    digest     TEXT   NOT NULL PRIMARY KEY,
    grant_id   TEXT   NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at    BIGINT NULL,
    revoked_at BIGINT NULL
);
CREATE INDEX idx_oauth_refresh_tokens_grant_id ON oauth_refresh_tokens (grant_id);
