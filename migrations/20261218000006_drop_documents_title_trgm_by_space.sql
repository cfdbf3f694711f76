-- no-transaction
-- Contract: documents_title_trgm_by_space is replaced by document_titles_keys (the
-- searches of this release, through kh_title_page, and of the previous one, through
-- kh_title_matches, read the copied titles' index since 20261218000005), and an update of
-- a document that is not HOT no longer writes its title's trigrams.
-- No lock_timeout: sqlx sends this file as one query (see 20261218000004). DROP INDEX
-- CONCURRENTLY waits for the transactions that use the index, blocking none.
-- squawk-ignore require-lock-timeout
DROP INDEX CONCURRENTLY IF EXISTS documents_title_trgm_by_space;
