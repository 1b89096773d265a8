-- The token endpoint's write transaction (refresh_token grant, crates/adapters-diesel
-- src/store/grants.rs rotate_refresh_token): read the refresh token with its grant, spend
-- it with a conditional update, insert a new access token and a new refresh token.
-- bench/run.sh runs it with -M prepared on the medialib database it benchmarked, after
-- inserting the rows `bench-1` .. `bench-200000` (-D grant=... names a real grant).
\set n random(1, 200000)
BEGIN;
SELECT r.grant_id, r.expires_at, r.used_at, r.revoked_at, g.client_id, g.user_id, g.scope, g.revoked_at
  FROM oauth_refresh_tokens r JOIN oauth_grants g ON g.id = r.grant_id
  WHERE r.digest = 'bench-' || :n;
UPDATE oauth_refresh_tokens SET used_at = 1
  WHERE digest = 'bench-' || :n AND used_at IS NULL AND revoked_at IS NULL;
INSERT INTO oauth_access_tokens (digest, grant_id, user_id, client_id, scope, created_at, expires_at)
  VALUES (md5(random()::text) || md5(random()::text), :grant, 'bench', 'bench', 'read write', 1, 4000000000);
INSERT INTO oauth_refresh_tokens (digest, grant_id, created_at, expires_at)
  VALUES (md5(random()::text) || md5(random()::text), :grant, 1, 4000000000);
END;
