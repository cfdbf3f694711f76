-- no-transaction
-- An author's documents, newest first (ids are UUIDv7, so id order is creation order), for
-- GET /api/v1/documents and the console's "my documents". Neither column ever changes, so
-- transitions stay HOT updates; the status filter is applied to the author's rows.
CREATE INDEX CONCURRENTLY IF NOT EXISTS documents_by_author ON documents (author_id, id);
