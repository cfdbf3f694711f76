-- no-transaction
-- The re-verification scheduler's work: published documents by the time their next
-- re-verification is due (but those whose revision is under review: its own review
-- decides). Built without blocking writes to documents. Only a transition
-- (whose status change is indexed already) or the scheduler's own changes move verify_by, so
-- no update that was HOT stops being.
-- No lock_timeout: sqlx sends this file as one query, and a SET beside the build would make
-- it a transaction block, where CONCURRENTLY cannot run. The build's SHARE UPDATE EXCLUSIVE
-- lock blocks no read or write.
-- squawk-ignore require-lock-timeout
CREATE INDEX CONCURRENTLY IF NOT EXISTS documents_verify_due ON documents (verify_by)
    WHERE verify_by IS NOT NULL AND status <> 'PENDING_REVIEW';
