-- Redirect-based sign-ins (OpenID Connect) in progress (PostgreSQL). Mirrors
-- ../../sqlite/2026-11-22-000003_pending_sign_ins/up.sql; keep both files in step
-- (see migrations/README.md).

-- One row per browser sent to the identity provider, keyed by the SHA-256 (lowercase hex) of
-- the `state` it carries; taken (deleted) when the browser comes back, so each is single use.
-- The nonce and PKCE verifier are useless without the provider's one-time code, and live at
-- most ten minutes; housekeeping deletes rows that were never taken.
CREATE TABLE pending_sign_ins (
    state_digest  TEXT   NOT NULL PRIMARY KEY,
    nonce         TEXT   NOT NULL,
    pkce_verifier TEXT   NOT NULL,
    return_to     TEXT   NOT NULL,
    expires_at    BIGINT NOT NULL
);
CREATE INDEX idx_pending_sign_ins_expires_at ON pending_sign_ins (expires_at);
