-- Reverts up.sql: drops every table it created, children before parents.
-- (Indexes go with their tables.)
DROP TABLE IF EXISTS oauth_refresh_tokens;
DROP TABLE IF EXISTS oauth_access_tokens;
DROP TABLE IF EXISTS oauth_codes;
DROP TABLE IF EXISTS oauth_grants;
DROP TABLE IF EXISTS oauth_client_redirect_uris;
DROP TABLE IF EXISTS oauth_clients;
DROP TABLE IF EXISTS permissions;
DROP TABLE IF EXISTS memberships;
DROP TABLE IF EXISTS object_properties;
DROP TABLE IF EXISTS objects;
DROP TABLE IF EXISTS users;
DROP TABLE IF EXISTS organization;
