-- no-transaction
-- The re-verification scheduler's work: approved documents by the time their next
-- re-verification is due. Built without blocking writes to documents.
CREATE INDEX CONCURRENTLY IF NOT EXISTS documents_verify_due ON documents (verify_by)
    WHERE status = 'APPROVED' AND verify_by IS NOT NULL;
