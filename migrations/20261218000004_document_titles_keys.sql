-- no-transaction
-- The title search's index: a posting list per space and trigram (kh_title_keys), over
-- the copied titles, which change only when a title does. fastupdate off: a new title's
-- keys go straight into the index, not into GIN's pending list, which every search would
-- read whole until a vacuum moved it into the index (on a table this rarely written, a
-- long time; at 1,000 documents it was the search's largest cost, 1.41 ms).
-- No lock_timeout: sqlx sends this file as one query, and a SET beside the build would make
-- it a transaction block, where CONCURRENTLY cannot run. The build's SHARE UPDATE EXCLUSIVE
-- lock blocks no read or write.
-- squawk-ignore require-lock-timeout
CREATE INDEX CONCURRENTLY IF NOT EXISTS document_titles_keys
    ON document_titles USING gin (kh_title_keys(space_id, title)) WITH (fastupdate = off);
