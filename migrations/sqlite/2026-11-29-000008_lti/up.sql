-- LTI (DECISIONS.md §8) (SQLite). Mirrors ../../postgres/2026-11-29-000008_lti/up.sql; keep both
-- files in step (see migrations/README.md).

-- LTI 1.1 consumers: an LMS that signs its launches with OAuth 1.0a HMAC-SHA1. HMAC needs
-- the secret itself, so it is stored as it is (as the LMS stores it).
CREATE TABLE lti_consumers (
    consumer_key TEXT   NOT NULL PRIMARY KEY,
    name         TEXT   NOT NULL,
    secret       TEXT   NOT NULL,
    created_at   BIGINT NOT NULL
);

-- The nonces of recent launches, one row per (consumer, nonce): a second insert of a pair
-- is a replay. Kept until the launch's timestamp leaves the 15-minute window; each launch
-- deletes its consumer's rows past that first.
CREATE TABLE lti_nonces (
    consumer_key TEXT   NOT NULL REFERENCES lti_consumers (consumer_key) ON DELETE CASCADE,
    nonce        TEXT   NOT NULL,
    kept_until   BIGINT NOT NULL,
    PRIMARY KEY (consumer_key, nonce)
);
CREATE INDEX idx_lti_nonces_consumer_key_kept_until ON lti_nonces (consumer_key, kept_until);

-- Each course's library: the platform (an LTI 1.1 consumer key) and the context id it
-- gives the course. A purged library takes its row with it.
CREATE TABLE lti_courses (
    platform   TEXT   NOT NULL,
    context_id TEXT   NOT NULL,
    library_id TEXT   NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (platform, context_id)
);
CREATE INDEX idx_lti_courses_library_id ON lti_courses (library_id);

-- LTI 1.3 platforms (`medialib lti platform add`), each by its issuer and the client id it gave
-- medialib, with the deployments of medialib it may launch.
CREATE TABLE lti_platforms (
    issuer          TEXT   NOT NULL,
    client_id       TEXT   NOT NULL,
    auth_url        TEXT   NOT NULL,
    token_url       TEXT   NOT NULL,
    jwks_url        TEXT   NOT NULL,
    unique_id_claim TEXT   NOT NULL,
    created_at      BIGINT NOT NULL,
    PRIMARY KEY (issuer, client_id)
);

CREATE TABLE lti_deployments (
    issuer        TEXT NOT NULL,
    client_id     TEXT NOT NULL,
    deployment_id TEXT NOT NULL,
    PRIMARY KEY (issuer, client_id, deployment_id),
    FOREIGN KEY (issuer, client_id) REFERENCES lti_platforms (issuer, client_id) ON DELETE CASCADE
);

-- medialib's own RSA keys for signing LTI 1.3 messages (Deep Linking responses), each a
-- PKCS#8 PEM private key by its `kid`. The newest signs; the newest two are published at
-- /api/lti/jwks, so that a platform's cached key set still holds the one before a rotation
-- (`medialib lti key rotate` deletes the older ones).
CREATE TABLE lti_keys (
    kid         TEXT   NOT NULL PRIMARY KEY,
    private_key TEXT   NOT NULL,
    created_at  BIGINT NOT NULL
);

-- LTI 1.3 logins begun (OIDC third-party-initiated login) and not yet launched: the state
-- sent to the platform, the nonce its id_token must carry, and the platform. A launch takes
-- its row (single use); rows past expires_at (10 minutes) are deleted by the next login.
CREATE TABLE lti_logins (
    state      TEXT   NOT NULL PRIMARY KEY,
    nonce      TEXT   NOT NULL,
    issuer     TEXT   NOT NULL,
    client_id  TEXT   NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX idx_lti_logins_expires_at ON lti_logins (expires_at);
