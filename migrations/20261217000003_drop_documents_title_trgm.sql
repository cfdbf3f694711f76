-- no-transaction
-- Contract: documents_title_trgm is replaced by documents_title_trgm_by_space (the
-- previous migration). No statement names an index, so the previous release searches
-- through the new one as well; dropping the old one spares every document update that
-- is not HOT its trigram entries a second time.
-- No lock_timeout: sqlx sends this file as one query (see the previous migration). DROP
-- INDEX CONCURRENTLY waits for the transactions that use the index, blocking none.
-- squawk-ignore require-lock-timeout
DROP INDEX CONCURRENTLY IF EXISTS documents_title_trgm;
