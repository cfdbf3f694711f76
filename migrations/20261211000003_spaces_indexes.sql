-- no-transaction
-- A space's documents and its review queue, read per space: a reviewer in 1 of 100 spaces
-- pages its queue without reading the other 99's reviews. Built concurrently: writes go on.
SET lock_timeout = '5s';
CREATE INDEX CONCURRENTLY IF NOT EXISTS documents_by_space ON documents (space_id, id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS reviews_queue_by_space ON reviews (space_id, status, queue_seq);
