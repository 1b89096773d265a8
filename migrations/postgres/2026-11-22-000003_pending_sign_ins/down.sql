-- Reverts up.sql (the index goes with its table).
DROP TABLE IF EXISTS pending_sign_ins;
