-- no-transaction
-- The review queue of a reviewer's spaces in commit order: a reviewer in 1 of 100 spaces
-- pages its queue without reading the other 99's reviews.
CREATE INDEX CONCURRENTLY IF NOT EXISTS reviews_queue_by_space ON reviews (space_id, status, queue_seq);
