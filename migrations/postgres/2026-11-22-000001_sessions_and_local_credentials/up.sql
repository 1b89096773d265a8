-- Browser sessions and the local SSO directory's passwords (PostgreSQL). Mirrors
-- ../../sqlite/2026-11-22-000001_sessions_and_local_credentials/up.sql; keep both files in step
-- (see migrations/README.md).

-- Server-side browser sessions, keyed by the SHA-256 (lowercase hex) of the cookie value.
CREATE TABLE browser_sessions (
    digest     TEXT   NOT NULL PRIMARY KEY,
    user_id    TEXT   NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX idx_browser_sessions_user_id ON browser_sessions (user_id);
CREATE INDEX idx_browser_sessions_expires_at ON browser_sessions (expires_at);

-- Password hashes of the `local` SSO directory (argon2id PHC strings), one per user.
CREATE TABLE local_credentials (
    user_id       TEXT   NOT NULL PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    password_hash TEXT   NOT NULL,
    updated_at    BIGINT NOT NULL
);

-- For housekeeping (`Housekeeping::purge_expired`): finding expired refresh tokens, and grants
-- that no code refers to any more, without scanning the whole table.
CREATE INDEX idx_oauth_refresh_tokens_expires_at ON oauth_refresh_tokens (expires_at);
CREATE INDEX idx_oauth_codes_grant_id ON oauth_codes (grant_id);
