-- no-transaction
-- The review queue ordered by due date (no due date last), then commit order.
CREATE INDEX CONCURRENTLY IF NOT EXISTS reviews_queue_due ON reviews (status, due_at, queue_seq);
