-- Reverts up.sql (indexes go with their tables).
DROP TABLE IF EXISTS lti_logins;
DROP TABLE IF EXISTS lti_keys;
DROP TABLE IF EXISTS lti_deployments;
DROP TABLE IF EXISTS lti_platforms;
DROP TABLE IF EXISTS lti_courses;
DROP TABLE IF EXISTS lti_nonces;
DROP TABLE IF EXISTS lti_consumers;
