-- no-transaction
-- The dispatchers' claim scans undone rows in id order. This index replaces outbox_undone:
-- its predicate is one the per-document lookups ("the oldest undone row of this document")
-- do not imply, so those can only use outbox_undone_by_document, whatever the statistics
-- say while a backlog grows faster than autovacuum analyses it. (next_attempt_at is
-- NOT NULL; the claims' `next_attempt_at <= now()` implies the predicate.)
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_due ON outbox (id)
    WHERE done_at IS NULL AND next_attempt_at IS NOT NULL;
