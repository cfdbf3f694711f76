-- The title search of a space's documents (GET /documents?space=&q=): a case-insensitive
-- substring match served by a trigram index. pg_trgm ships with PostgreSQL (contrib) and
-- is a trusted extension: the database's owner, who runs the migrations, may create it.
SET LOCAL lock_timeout = '5s';
CREATE EXTENSION IF NOT EXISTS pg_trgm;
