-- no-transaction
-- Superseded by outbox_due (see the migration before this one).
DROP INDEX CONCURRENTLY IF EXISTS outbox_undone;
