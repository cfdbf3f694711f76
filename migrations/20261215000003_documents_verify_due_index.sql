-- no-transaction
-- The re-verification scheduler's work: approved documents by the time their next
-- re-verification is due. Built without blocking writes to documents. Only a transition
-- (whose status change is indexed already) or the scheduler's own changes move verify_by, so
-- no update that was HOT stops being.
SET lock_timeout = '5s';
CREATE INDEX CONCURRENTLY IF NOT EXISTS documents_verify_due ON documents (verify_by)
    WHERE status = 'APPROVED' AND verify_by IS NOT NULL;
