-- no-transaction
-- The title search of a space by the space and the title's trigrams together. With the
-- trigrams alone (documents_title_trgm) a search reads the posting lists of every space's
-- titles and drops the other spaces' rows afterwards: `q=policy` in a space of 10,000 of
-- 1,000,000 documents read 73,155 entries to keep 286 (about 12 ms). This index intersects
-- the space's entry with the trigrams' in the index. Expand: the search statements are
-- unchanged (kh_title_matches), the planner takes the cheaper index; the next migration
-- drops the old one.
-- No lock_timeout: sqlx sends this file as one query, and a SET beside the build would make
-- it a transaction block, where CONCURRENTLY cannot run. The build's SHARE UPDATE EXCLUSIVE
-- lock blocks no read or write.
-- squawk-ignore require-lock-timeout
CREATE INDEX CONCURRENTLY IF NOT EXISTS documents_title_trgm_by_space
    ON documents USING gin (space_id, lower(title) gin_trgm_ops);
