DROP TABLE media;
DROP TABLE uploads;
ALTER TABLE organization DROP COLUMN media_signing_key;
