-- no-transaction
-- A document's review history, page by page in commit order (GET /documents/{id}/reviews).
CREATE INDEX CONCURRENTLY IF NOT EXISTS reviews_history ON reviews (document_id, queue_seq);
