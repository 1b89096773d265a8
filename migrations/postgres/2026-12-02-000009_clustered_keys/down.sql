-- up.sql changed nothing.
SELECT 1;
