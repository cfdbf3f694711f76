-- no-transaction
-- The case-insensitive title match of GET /documents?space=&q=, by trigrams.
CREATE INDEX CONCURRENTLY IF NOT EXISTS documents_title_trgm
    ON documents USING gin (lower(title) gin_trgm_ops);
