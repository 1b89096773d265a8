-- Reverts up.sql, in reverse order. (The new tables' indexes go with their tables.)
DROP INDEX IF EXISTS idx_oauth_codes_grant_id;
DROP INDEX IF EXISTS idx_oauth_refresh_tokens_expires_at;
DROP TABLE IF EXISTS local_credentials;
DROP TABLE IF EXISTS browser_sessions;
