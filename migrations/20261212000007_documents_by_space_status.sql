-- no-transaction
-- A space's documents in one status, newest first (GET /documents?space=&status=). With
-- (space_id, id) alone, a status the space holds few of read every document of the space.
-- Status is already in documents_by_author_status, so no update that was HOT stops being.
CREATE INDEX CONCURRENTLY IF NOT EXISTS documents_by_space_status
    ON documents (space_id, status, id);
