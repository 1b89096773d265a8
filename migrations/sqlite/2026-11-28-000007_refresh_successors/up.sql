-- The pair a refresh token's rotation gave, kept with the spent token: a retry of that
-- rotation within the grace period (refresh_token_retry_grace) gets a new pair in place of
-- this one while it is untouched (docs/security.md, "Refresh retries"). NULL for tokens not
-- yet spent, for those spent before this migration (a retry of them is reuse), and for pairs
-- a retry took back.
ALTER TABLE oauth_refresh_tokens ADD COLUMN successor_digest TEXT NULL;
ALTER TABLE oauth_refresh_tokens ADD COLUMN successor_access_digest TEXT NULL;
