ALTER TABLE oauth_refresh_tokens DROP COLUMN successor_access_digest;
ALTER TABLE oauth_refresh_tokens DROP COLUMN successor_digest;
