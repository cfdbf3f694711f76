-- no-transaction
-- A space's documents, read per space (GET /documents?space=). Built concurrently: writes
-- go on. A `-- no-transaction` migration holds one statement: sqlx sends the file as one
-- query string, which PostgreSQL runs in an implicit transaction when it holds more than one.
CREATE INDEX CONCURRENTLY IF NOT EXISTS documents_by_space ON documents (space_id, id);
