-- no-transaction
SET lock_timeout = '5s';
CREATE INDEX CONCURRENTLY IF NOT EXISTS documents_title_trgm
    ON documents USING gin (lower(title) gin_trgm_ops);
