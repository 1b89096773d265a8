-- The read-mostly tables with a TEXT primary key become clustered (`WITHOUT ROWID`, SQLite
-- only; ../../postgres/2026-12-02-000009_clustered_keys/up.sql changes nothing and says why).
--
-- A rowid table keeps its rows in one B-tree keyed by a hidden integer and its TEXT primary key
-- in a second one, so every read by id searches two trees: the key's, then the rows'. Clustered,
-- the row lives in the primary key's tree and one search finds it. Every describe reads an object
-- by id, its properties by (object, key), its membership, and for a token holder the grant, the
-- user and the entry on the library: half the B-tree searches of the hot reads go
-- (docs/performance.md, "Clustered keys"). Left as they are: the token and code tables, whose
-- keys are random digests inserted on every grant (a clustered row would land in a random leaf
-- and split it, where now only the small key entry does), and `media` and the tables of uploads,
-- jobs, sessions and LTI, whose rows are larger or mostly written.
--
-- The tables are rebuilt (new table, copy, drop, rename): the columns, types, constraints and
-- index names stay as they were, so schema.rs does not change. `objects` and `users` are
-- parents, and dropping a parent with foreign keys on would fire its children's ON DELETE
-- CASCADE, so this migration runs outside diesel's transaction (metadata.toml), turns the
-- checks off around its own transaction, and fails before COMMIT if any reference is left
-- dangling (the temporary table's CHECK). A crash before diesel records the version runs it
-- again at the next start, which rebuilds the tables once more, to the same result.
PRAGMA foreign_keys = OFF;
BEGIN;

CREATE TABLE users_new (
    id          TEXT    NOT NULL PRIMARY KEY,
    unique_id   TEXT    NOT NULL UNIQUE,
    first_name  TEXT    NOT NULL,
    last_name   TEXT    NOT NULL,
    org_admin   BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  BIGINT  NOT NULL,
    modified_at BIGINT  NOT NULL
) WITHOUT ROWID;
INSERT INTO users_new (id, unique_id, first_name, last_name, org_admin, created_at, modified_at)
    SELECT id, unique_id, first_name, last_name, org_admin, created_at, modified_at FROM users;
DROP TABLE users;
ALTER TABLE users_new RENAME TO users;

CREATE TABLE oauth_clients_new (
    id            TEXT   NOT NULL PRIMARY KEY,
    name          TEXT   NOT NULL,
    secret_digest TEXT   NULL, -- NULL = public client
    created_at    BIGINT NOT NULL
) WITHOUT ROWID;
INSERT INTO oauth_clients_new (id, name, secret_digest, created_at)
    SELECT id, name, secret_digest, created_at FROM oauth_clients;
DROP TABLE oauth_clients;
ALTER TABLE oauth_clients_new RENAME TO oauth_clients;

CREATE TABLE oauth_client_redirect_uris_new (
    client_id TEXT    NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    uri       TEXT    NOT NULL,
    position  INTEGER NOT NULL,
    PRIMARY KEY (client_id, uri)
) WITHOUT ROWID;
INSERT INTO oauth_client_redirect_uris_new (client_id, uri, position)
    SELECT client_id, uri, position FROM oauth_client_redirect_uris;
DROP TABLE oauth_client_redirect_uris;
ALTER TABLE oauth_client_redirect_uris_new RENAME TO oauth_client_redirect_uris;

CREATE TABLE oauth_grants_new (
    id         TEXT    NOT NULL PRIMARY KEY,
    client_id  TEXT    NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    user_id    TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    scope      TEXT    NOT NULL,
    offline    BOOLEAN NOT NULL,
    created_at BIGINT  NOT NULL,
    revoked_at BIGINT  NULL
) WITHOUT ROWID;
INSERT INTO oauth_grants_new (id, client_id, user_id, scope, offline, created_at, revoked_at)
    SELECT id, client_id, user_id, scope, offline, created_at, revoked_at FROM oauth_grants;
DROP TABLE oauth_grants;
ALTER TABLE oauth_grants_new RENAME TO oauth_grants;
CREATE INDEX idx_oauth_grants_client_id ON oauth_grants (client_id);
CREATE INDEX idx_oauth_grants_user_id ON oauth_grants (user_id);

CREATE TABLE objects_new (
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
    deleted_at  BIGINT  NULL,
    deleted_from TEXT    NULL
) WITHOUT ROWID;
INSERT INTO objects_new (id, object_type, title, description, public, duration, owner_id, shortcode, created_at, modified_at, deleted_at, deleted_from)
    SELECT id, object_type, title, description, public, duration, owner_id, shortcode, created_at, modified_at, deleted_at, deleted_from FROM objects;
DROP TABLE objects;
ALTER TABLE objects_new RENAME TO objects;
CREATE INDEX idx_objects_deleted_at ON objects (deleted_at);
CREATE INDEX idx_objects_modified_at ON objects (modified_at);

CREATE TABLE object_properties_new (
    object_id TEXT NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
    key       TEXT NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY (object_id, key)
) WITHOUT ROWID;
INSERT INTO object_properties_new (object_id, key, value)
    SELECT object_id, key, value FROM object_properties;
DROP TABLE object_properties;
ALTER TABLE object_properties_new RENAME TO object_properties;

CREATE TABLE memberships_new (
    collection_id      TEXT   NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
    member_id          TEXT   NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
    added_at           BIGINT NOT NULL,
    member_modified_at BIGINT NOT NULL,
    PRIMARY KEY (collection_id, member_id)
) WITHOUT ROWID;
INSERT INTO memberships_new (collection_id, member_id, added_at, member_modified_at)
    SELECT collection_id, member_id, added_at, member_modified_at FROM memberships;
DROP TABLE memberships;
ALTER TABLE memberships_new RENAME TO memberships;
CREATE INDEX idx_memberships_collection_id_added_at ON memberships (collection_id, added_at);
CREATE INDEX idx_memberships_collection_id_member_modified_at ON memberships (collection_id, member_modified_at DESC, member_id);
CREATE INDEX idx_memberships_member_id ON memberships (member_id);

CREATE TABLE permissions_new (
    collection_id TEXT   NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
    user_id       TEXT   NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    level         TEXT   NOT NULL CHECK (level IN ('none', 'view', 'admin')),
    granted_at    BIGINT NOT NULL,
    PRIMARY KEY (collection_id, user_id)
) WITHOUT ROWID;
INSERT INTO permissions_new (collection_id, user_id, level, granted_at)
    SELECT collection_id, user_id, level, granted_at FROM permissions;
DROP TABLE permissions;
ALTER TABLE permissions_new RENAME TO permissions;
CREATE INDEX idx_permissions_user_id ON permissions (user_id);

-- Nothing may point nowhere: a row of pragma_foreign_key_check fails the CHECK, and the
-- migration with it, before COMMIT.
CREATE TEMP TABLE clustered_keys_check (dangling INTEGER NOT NULL CHECK (dangling = 0));
INSERT INTO clustered_keys_check SELECT count(*) FROM pragma_foreign_key_check;
DROP TABLE clustered_keys_check;
COMMIT;
PRAGMA foreign_keys = ON;
