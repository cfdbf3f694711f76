-- no-transaction
-- The review queue of a reviewer's spaces by due date (GET /reviews?order=due): each space
-- is read in (due_at, queue_seq) order and stops at the page's end, so a reviewer in 1 of
-- 100 spaces pages its queue without reading the other 99's reviews, nor every pending
-- review of its own space.
CREATE INDEX CONCURRENTLY IF NOT EXISTS reviews_queue_due_by_space
    ON reviews (space_id, status, due_at, queue_seq);
